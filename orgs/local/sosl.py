"""SOSL for the local org: `FIND {terms} [IN ALL|NAME|EMAIL|PHONE FIELDS] [RETURNING Obj(fields [WHERE ...]
[ORDER BY ...] [LIMIT n] [OFFSET n]), ...] [LIMIT n]`.

The search terms: words and "quoted phrases", case-insensitive; `AND`, `OR`, `AND NOT` and parentheses,
evaluated left to right (adjacent terms are ANDed); wildcards `*` (any characters) and `?` (one
character), never first; `\\` escapes a reserved character (`& | ! { } [ ] ( ) ^ ~ * : \\ " ' + -`).
A record matches when its searched fields (all text fields, or the name/email/phone group) contain the
terms, token by token (see `text.py` for tokens). Matching uses the store's FTS5 index; words with a
wildcard inside (`sm?th`, `jo*n`) are checked token by token by a SQL function instead. Results come per
RETURNING object, in relevance order unless ORDER BY is given, at most 2,000 in all.

The WHERE / ORDER BY / field lists inside RETURNING are SOQL and compile with the SOQL compiler.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from orgs.local.errors import QueryError
from orgs.local.soql import ast
from orgs.local.soql.errors import SoqlError
from orgs.local.soql.limits import MAX_SEARCH_CHARS, MAX_SEARCH_NESTING, SEARCH_OPERATORS_CHARS
from orgs.local.soql.parser import CLAUSE_WORDS, Parser
from orgs.local.soql.plan import RecordShape
from orgs.local.soql.scope import Scope, quote, resolve_object
from orgs.local.soql.to_sql import MAX_OFFSET, Compiler
from orgs.local.soql.tokens import T, check_length, tokenize
from orgs.local.store import fts_table, searchable_fields
from orgs.local.text import search_tokens
from schemas.model import FieldSpec, ObjectSpec, OrgModel

MAX_ROWS = 2000
RESERVED_ERROR = set("&|![]^~:{")  # unescaped, these are syntax errors (`(`, `)`, `"`, `*`, `?` are syntax)
GROUPS = ("ALL", "NAME", "EMAIL", "PHONE")
PERSON_NAME_FIELDS = ("FirstName", "LastName")
_MATCHERS = itertools.count()


class SoslError(QueryError):
    """A SOSL text the local org refuses (MALFORMED_SEARCH / INVALID_SEARCH / SOQL codes inside RETURNING)."""

    default_code = "MALFORMED_SEARCH"


# -- the search expression ---------------------------------------------------------------------------------


@dataclass
class Term:
    """A word or a quoted phrase. `tokens` are its search tokens; wildcards make it a pattern."""

    text: str
    pos: int
    phrase: bool
    tokens: list[str]
    prefix: bool = False  # ends with `*`: the last token is a prefix
    pattern: re.Pattern[str] | None = None  # a wildcard inside: matches one token


@dataclass
class Group:
    """Terms joined by one operator: OR (any), AND (all), AND NOT (the first and none of the others)."""

    op: str  # AND | OR | AND NOT
    items: list[Node]
    depth: int = 1  # levels of groups, this one included


Node = Term | Group


def _depth(node: Node) -> int:
    return node.depth if isinstance(node, Group) else 0


def combine(op: str, left: Node, right: Node) -> Group:
    """`left op right`, evaluated left to right, as a flat group where the operator allows it: chains of
    one operator stay one level deep however long they are."""
    if isinstance(left, Group) and left.op == op:
        items = list(left.items)
    else:
        items = [left]
    if op != "AND NOT" and isinstance(right, Group) and right.op == op:
        items += right.items  # AND and OR are associative
    else:
        items.append(right)
    return Group(op, items, 1 + max(_depth(item) for item in items))


class _TermParser:
    """The text between FIND's braces → Term/Group tree; offsets are absolute in the SOSL text."""

    def __init__(self, source: str, start: int, end: int, operators: bool = True) -> None:
        self.src = source
        self.pos = start
        self.end = end
        self.depth = 0  # parentheses
        self.operators = operators  # False: every operator is OR (Salesforce, beyond 4,000 characters)

    def fail(self, detail: str, offset: int, code: str = "MALFORMED_SEARCH") -> SoslError:
        return SoslError(detail, self.src, offset, error_code=code)

    def too_complicated(self, offset: int) -> SoslError:
        return self.fail(
            f"Search query is too complicated: more than {MAX_SEARCH_NESTING} levels of parentheses or of "
            "changing operators. Group fewer alternations (a OR b OR c needs no parentheses).",
            offset,
            "QUERY_TOO_COMPLICATED",
        )

    def mismatched(self, offset: int) -> SoslError:
        line = self.src.count("\n", 0, offset) + 1
        col0 = offset - (self.src.rfind("\n", 0, offset) + 1)
        ch = self.src[offset]
        return self.fail(f"line {line}:{col0} mismatched character '{ch}' expecting '}}'", offset)

    def skip_ws(self) -> None:
        while self.pos < self.end and self.src[self.pos].isspace():
            self.pos += 1

    def parse(self) -> Node:
        self.skip_ws()
        if self.pos >= self.end:
            raise self.fail("search term must be longer than one character: ", self.pos, "INVALID_SEARCH")
        start = self.pos
        node = self.expression(top=True)
        self.skip_ws()
        if self.pos < self.end:
            raise self.mismatched(self.pos)
        if sum(len("".join(t.tokens)) for t in _terms(node)) < 2:
            text = self.src[start : self.end].strip()
            raise self.fail(f"search term must be longer than one character: {text}", start, "INVALID_SEARCH")
        return node

    def expression(self, top: bool = False) -> Node:
        left = self.item()
        while True:
            self.skip_ws()
            if self.pos >= self.end or self.src[self.pos] == ")":
                return left
            at = self.pos
            op = self.operator() if self.operators else (self.operator() and "OR")
            right = self.item()
            left = combine(op, left, right)
            if left.depth > MAX_SEARCH_NESTING:
                raise self.too_complicated(at)

    def operator(self) -> str:
        word, after = self.peek_word()
        if word == "OR":
            self.pos = after
            return "OR"
        if word == "AND":
            self.pos = after
            self.skip_ws()
            nxt, after2 = self.peek_word()
            if nxt == "NOT":
                self.pos = after2
                return "AND NOT"
            return "AND"
        return "AND"  # adjacent terms

    def peek_word(self) -> tuple[str, int]:
        i = self.pos
        while i < self.end and (self.src[i].isalnum() or self.src[i] == "_"):
            i += 1
        if i == self.pos or (i < self.end and not self.src[i].isspace() and self.src[i] not in '()"'):
            return "", self.pos
        return self.src[self.pos : i].upper(), i

    def item(self) -> Node:
        self.skip_ws()
        if self.pos >= self.end:
            raise self.fail("unexpected end of search term: an operator needs a term after it.", self.pos)
        ch = self.src[self.pos]
        if ch == "(":
            self.depth += 1
            if self.depth > MAX_SEARCH_NESTING:
                raise self.too_complicated(self.pos)
            self.pos += 1
            node = self.expression()
            self.skip_ws()
            if self.pos >= self.end or self.src[self.pos] != ")":
                raise self.fail("unbalanced parentheses in the search term: add the missing ')'.", self.pos)
            self.pos += 1
            self.depth -= 1
            return node
        if ch == ")":
            raise self.mismatched(self.pos)
        if ch == '"':
            return self.phrase()
        word, _ = self.peek_word()
        if word in ("AND", "OR"):
            raise self.fail(
                f'unexpected operator {word}: put a term before it, or quote it ("{word.lower()}") to '
                "search for the word.",
                self.pos,
            )
        return self.word()

    def read(self, stop: str) -> list[tuple[str, bool]]:
        """Characters up to a stop character, each with whether it was escaped (an escaped character is
        literal: never a wildcard or an operator)."""
        out: list[tuple[str, bool]] = []
        while self.pos < self.end:
            ch = self.src[self.pos]
            if ch == "\\":
                if self.pos + 1 >= self.end:
                    raise self.fail("a search term can not end with a lone backslash.", self.pos)
                out.append((self.src[self.pos + 1], True))
                self.pos += 2
                continue
            if ch in stop or (stop == " " and ch.isspace()):
                break
            if ch in RESERVED_ERROR:
                raise self.mismatched(self.pos)
            out.append((ch, False))
            self.pos += 1
        return out

    def phrase(self) -> Term:
        start = self.pos
        self.pos += 1
        raw = self.read('"')
        if self.pos >= self.end:
            raise self.fail("unclosed quote in the search term: end the phrase with '\"'.", start)
        self.pos += 1
        return self.term(raw, start, phrase=True)

    def word(self) -> Term:
        start = self.pos
        raw = self.read(' ()"')
        if not raw:
            raise self.mismatched(self.pos)
        return self.term(raw, start, phrase=False)

    def term(self, raw: list[tuple[str, bool]], start: int, phrase: bool) -> Term:
        """A Term from its characters (each with whether it was escaped)."""
        chars = [(ch, not escaped and ch in "*?") for ch, escaped in raw]  # (character, is_wildcard)
        text = "".join(ch for ch, _ in chars)
        literal = "".join(ch for ch, wild in chars if not wild)
        wild_at = [k for k, (_, wild) in enumerate(chars) if wild]
        if wild_at and wild_at[0] == 0:
            raise self.fail(
                f"a search term can not start with a wildcard: {text}. Put at least two characters before it.",
                start,
                "INVALID_SEARCH",
            )
        tokens = search_tokens(literal)
        if not tokens:
            raise self.fail(f"search term must be longer than one character: {text}", start, "INVALID_SEARCH")
        if not wild_at:
            return Term(text, start, phrase, tokens)
        if len("".join(tokens)) < 2:
            raise self.fail(f"search term must be longer than one character: {text}", start, "INVALID_SEARCH")
        if wild_at == [len(chars) - 1] and chars[-1][0] == "*":
            return Term(text, start, phrase, tokens, prefix=True)
        # a wildcard inside a word: the word must be a single token (letters and digits) with wildcards
        if any(not wild and not (ch.isalnum() and ch != "_") for ch, wild in chars):
            raise SoslError(
                f"wildcards inside a word with punctuation or spaces ({text}) are not supported by the local "
                "org; use a trailing * or split the word.",
                self.src,
                start,
            )
        regex = "".join(
            ("[^\\W_]*" if ch == "*" else "[^\\W_]") if wild else re.escape(ch.lower()) for ch, wild in chars
        )
        return Term(text, start, phrase, tokens, pattern=re.compile(regex + r"\Z"))


def _terms(node: Node) -> list[Term]:
    if isinstance(node, Term):
        return [node]
    return [t for item in node.items for t in _terms(item)]


def _has_pattern(node: Node) -> bool:
    return any(t.pattern is not None for t in _terms(node))


def _fts_query(node: Node) -> str:
    """The FTS5 MATCH expression (built only from search tokens, which are letters and digits)."""
    if isinstance(node, Term):
        phrase = '"' + " ".join(node.tokens) + '"'
        return phrase + " *" if node.prefix else phrase
    op = "NOT" if node.op == "AND NOT" else node.op  # FTS5's NOT is binary: a NOT b NOT c = (a NOT b) NOT c
    return "(" + f" {op} ".join(_fts_query(item) for item in node.items) + ")"


def _matches(node: Node, fields: list[list[str]]) -> bool:
    """Token-level evaluation (used when a word has a wildcard inside)."""
    if isinstance(node, Group):
        if node.op == "OR":
            return any(_matches(item, fields) for item in node.items)
        if node.op == "AND":
            return all(_matches(item, fields) for item in node.items)
        first, *rest = node.items
        return _matches(first, fields) and not any(_matches(item, fields) for item in rest)
    if node.pattern is not None:
        pattern = node.pattern
        return any(pattern.match(tok) for toks in fields for tok in toks)
    want = node.tokens
    n = len(want)
    for toks in fields:
        for i in range(len(toks) - n + 1):
            window = toks[i : i + n]
            if window[:-1] == want[:-1] and (
                window[-1].startswith(want[-1]) if node.prefix else window[-1] == want[-1]
            ):
                return True
    return False


# -- the statement ------------------------------------------------------------------------------------------


@dataclass
class ObjectSearch:
    """One RETURNING object, compiled: SQL selecting its matching records in order, and their shape."""

    sobject: str
    sql: str
    params: dict[str, Any]
    shape: RecordShape
    matcher: tuple[str, Node, int] | None = None  # (SQL function name, tree, number of text columns)


@dataclass
class SearchPlan:
    objects: list[ObjectSearch] = field(default_factory=list)
    limit: int = MAX_ROWS


@dataclass
class _Returning:
    name: ast.Ident
    select: list[ast.SelectItem]
    where: ast.Cond | None = None
    order_by: list[ast.OrderItem] = field(default_factory=list)
    limit: ast.Literal | None = None
    offset: ast.Literal | None = None


def compile_sosl(source: str, model: OrgModel, today: date) -> SearchPlan:
    """SOSL text → SearchPlan. Raises SoslError (or a SOQL error for the RETURNING parts), located."""
    try:
        return _compile(source, model, today)
    except SoslError:
        raise
    except SoqlError as exc:
        if exc.error_code == "MALFORMED_QUERY":
            raise SoslError(exc.detail, source, exc.offset) from exc
        raise


def _compile(source: str, model: OrgModel, today: date) -> SearchPlan:
    check_length(source, "SOSL", "MALFORMED_SEARCH")
    m = re.match(r"\s*FIND\b\s*", source, re.IGNORECASE)
    if not m:
        start = len(source) - len(source.lstrip())
        raise SoslError("unexpected token: a search starts with FIND {terms}.", source, start)
    open_at = m.end()
    if open_at >= len(source) or source[open_at] != "{":
        shown = source[open_at] if open_at < len(source) else "<EOF>"
        if shown == "'":
            raise SoslError(
                "FIND 'terms' is Apex syntax; over the REST API write FIND {terms}.", source, open_at
            )
        raise SoslError(f"line 1:{open_at} mismatched character '{shown}' expecting '{{'", source, open_at)
    close_at = _closing_brace(source, open_at + 1)
    # Salesforce: a search query longer than 4,000 characters loses its logical operators (its terms are
    # ORed); one longer than 10,000 characters returns no rows
    length = close_at - open_at - 1
    terms = _TermParser(source, open_at + 1, close_at, operators=length <= SEARCH_OPERATORS_CHARS).parse()
    parser = Parser(source, tokenize(source, close_at + 1))
    group = "ALL"
    if parser.match_kw("IN"):
        which = parser.ident()
        if which.upper not in GROUPS:
            if which.upper == "SIDEBAR":
                raise SoslError(
                    "IN SIDEBAR FIELDS is not supported by the local org; use IN ALL FIELDS.",
                    source,
                    which.pos,
                )
            raise SoslError(f"unexpected token: '{which.name}'", source, which.pos)
        group = which.upper
        parser.expect_kw("FIELDS")
    specs: list[_Returning] = []
    if parser.match_kw("RETURNING"):
        specs.append(_returning(parser))
        while parser.match(T.COMMA):
            specs.append(_returning(parser))
    if parser.tok.is_kw("WITH", "UPDATE"):
        raise SoslError(
            f"{parser.tok.text.upper()} clauses are not supported by the local org; remove it.",
            source,
            parser.tok.offset,
        )
    limit = MAX_ROWS
    if parser.match_kw("LIMIT"):
        limit = min(MAX_ROWS, parser.count_value("LIMIT").count)
    if parser.tok.kind is not T.EOF:
        raise parser.unexpected()
    if not specs:
        specs = [
            _Returning(ast.Ident(close_at, o.name), [_id_item(close_at)])
            for o in model
            if searchable_fields(o)
        ]
    plan = SearchPlan(limit=0 if length > MAX_SEARCH_CHARS else limit)
    seen: set[str] = set()
    for spec in specs:
        obj = _object_search(spec, terms, group, model, today, source)
        if obj is None:
            continue
        if obj.sobject in seen:
            raise SoslError(f"duplicate entity: {obj.sobject}", source, spec.name.pos)
        seen.add(obj.sobject)
        plan.objects.append(obj)
    return plan


def _closing_brace(source: str, i: int) -> int:
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "}":
            return i
        i += 1
    raise SoslError(f"line 1:{len(source)} mismatched character '<EOF>' expecting '}}'", source, len(source))


def _id_item(pos: int) -> ast.SelectItem:
    return ast.SelectItem(pos, ast.FieldPath(pos, [ast.Ident(pos, "Id")]))


def _returning(p: Parser) -> _Returning:
    name = p.ident()
    spec = _Returning(name, [_id_item(name.pos)])
    if not p.match(T.LPAREN):
        return spec
    spec.select = p.select_list()
    if p.match_kw("WHERE"):
        spec.where = p.condition()
    if p.match_kw("ORDER"):
        p.expect_kw("BY")
        spec.order_by = [p.order_item()]
        while p.match(T.COMMA):
            spec.order_by.append(p.order_item())
    if p.match_kw("LIMIT"):
        spec.limit = p.count_value("LIMIT")
    if p.match_kw("OFFSET"):
        spec.offset = p.count_value("OFFSET")
    p.expect(T.RPAREN)
    return spec


def group_fields(spec: ObjectSpec, group: str) -> list[FieldSpec]:
    """The fields a search group covers on an object (in store column order)."""
    text = searchable_fields(spec)
    if group == "ALL":
        return text
    if group == "EMAIL":
        return [f for f in text if f.type == "email"]
    if group == "PHONE":
        return [f for f in text if f.type == "phone"]
    names = {spec.name_field, *(n for n in PERSON_NAME_FIELDS if spec.has_field(n))} - {None}
    return [f for f in text if f.name in names]


def _object_search(
    spec_r: _Returning, terms: Node, group: str, model: OrgModel, today: date, source: str
) -> ObjectSearch | None:
    spec = resolve_object(model, spec_r.name, source)
    all_text = searchable_fields(spec)
    if not all_text:
        raise SoslError(
            f"entity type {spec.name} does not support search",
            source,
            spec_r.name.pos,
            error_code="INVALID_TYPE",
        )
    if spec_r.offset is not None and spec_r.offset.count > MAX_OFFSET:
        raise SoslError(
            f"Maximum SOSL offset allowed is {MAX_OFFSET}",
            source,
            spec_r.offset.pos,
            error_code="NUMBER_OUTSIDE_VALID_RANGE",
        )
    fields = group_fields(spec, group)
    compiler = Compiler(model, today, source)
    scope = Scope(model, spec, "t0", source)
    q = ast.Query(
        spec_r.name.pos, source, spec_r.select, spec_r.name, where=spec_r.where, order_by=spec_r.order_by
    )
    for item in spec_r.select:
        if isinstance(item.expr, ast.Call) and item.expr.is_aggregate:
            raise compiler.unsupported(item.pos, "aggregate functions in SOSL")
    cols: list[str] = []
    shape = compiler.record_shape(q, scope, cols, allow_subqueries=False)
    where = ""
    if spec_r.where is not None:
        where = " AND " + compiler.cond_sql(spec_r.where, scope)
    order_items = compiler.order_sql(q, scope, aggregate=False)  # ends with the rowid tie-breaker
    limit = ""
    if spec_r.limit is not None:
        limit = f" LIMIT {compiler.param(spec_r.limit.count)}"
    if spec_r.offset is not None:
        limit = (limit or " LIMIT -1") + f" OFFSET {compiler.param(spec_r.offset.count)}"
    joins = "".join(" " + j for j in scope.join_sql)
    select = "SELECT " + ", ".join(cols)
    if not fields:
        # the object has no field in this group (e.g. no phone field): nothing can match
        sql = f"{select} FROM {quote(spec.name)} AS t0{joins} WHERE 0"
        return ObjectSearch(spec.name, sql, compiler.params, shape)
    matcher = None
    if _has_pattern(terms):
        name = f"sosl_match_{next(_MATCHERS)}"
        args = ", ".join(f"t0.{quote(f.name)}" for f in fields)
        sql = f"{select} FROM {quote(spec.name)} AS t0{joins} WHERE {name}({args}){where}{order_items}{limit}"
        matcher = (name, terms, len(fields))
    else:
        match = _fts_query(terms)
        if group != "ALL":
            match = "{" + " ".join(f.name for f in fields) + "} : (" + match + ")"
        fts = fts_table(spec.name)
        m = compiler.param(match)
        order = order_items if spec_r.order_by else " ORDER BY f.rank, t0.rowid"
        sql = (
            f"{select} FROM (SELECT rowid AS r, rank FROM {fts} WHERE {fts} MATCH {m}) AS f "
            f"JOIN {quote(spec.name)} AS t0 ON t0.rowid = f.r{joins} WHERE 1{where}{order}{limit}"
        )
    return ObjectSearch(spec.name, sql, compiler.params, shape, matcher)


def register_matcher(conn: sqlite3.Connection, matcher: tuple[str, Node, int]) -> None:
    """Make a wildcard matcher callable from SQL on this connection (idempotent)."""
    name, tree, nargs = matcher

    def match(*values: str | None) -> int:
        fields = [search_tokens(v) if v else [] for v in values]
        return 1 if _matches(tree, fields) else 0

    conn.create_function(name, nargs, match, deterministic=True)


__all__ = ["CLAUSE_WORDS", "SearchPlan", "SoslError", "compile_sosl", "group_fields", "register_matcher"]
