"""Tokens → syntax tree (recursive descent). Clause order is SOQL's:

SELECT items FROM Object [alias] [USING SCOPE s] [WHERE cond] [WITH ...] [GROUP BY items [HAVING cond]]
[ORDER BY items] [LIMIT n] [OFFSET n] [FOR VIEW|REFERENCE|UPDATE]

The condition grammar lives in `conditions.py`. Syntax errors say which token was unexpected, where.
"""

from __future__ import annotations

from orgs.local.soql import ast
from orgs.local.soql.conditions import ConditionParser
from orgs.local.soql.cursor import SoqlParseError
from orgs.local.soql.limits import MAX_INTEGER
from orgs.local.soql.tokens import T, tokenize_compact

__all__ = ["CLAUSE_WORDS", "Parser", "SoqlParseError", "parse"]


# Words that end a select item or a FROM object (so they are never taken as an alias).
CLAUSE_WORDS = frozenset(
    {
        "FROM",
        "WHERE",
        "WITH",
        "GROUP",
        "HAVING",
        "ORDER",
        "LIMIT",
        "OFFSET",
        "FOR",
        "USING",
        "UPDATE",
        "ALL",
        "SELECT",
        "AND",
        "OR",
        "NOT",
        "ASC",
        "DESC",
        "NULLS",
        "TYPEOF",
        "END",
    }
)


def parse(source: str) -> ast.Query:
    """Parse one SOQL query."""
    return Parser(source, tokenize_compact(source)).parse_top()


class Parser(ConditionParser):
    """Recursive descent over the tokens of one query (conditions come from `ConditionParser`)."""

    # -- query --------------------------------------------------------------------------------------------

    def parse_top(self) -> ast.Query:
        if self.tok.kind is T.EOF:
            raise self.error("unexpected token: '<EOF>'. A query starts with SELECT.")
        query = self.query()
        if self.tok.kind is not T.EOF:
            raise self.unexpected()
        return query

    def query(self) -> ast.Query:
        start = self.tok.offset
        self.expect_kw("SELECT")
        select = self.select_list()
        self.expect_kw("FROM")
        sobject = self.ident()
        alias = None
        if self.tok.kind is T.IDENT and self.tok.upper not in CLAUSE_WORDS:
            alias = self.ident()
        q = ast.Query(start, self.source, select, sobject, alias)
        if self.match_kw("USING"):
            self.expect_kw("SCOPE")
            q.using_scope = self.ident()
        if self.match_kw("WHERE"):
            q.where = self.condition()
        if self.match_kw("WITH"):
            q.with_clause = self.ident()
            if q.with_clause.upper == "DATA":
                raise self.error(
                    "WITH DATA CATEGORY is not supported by the local org (it has no data categories).",
                    offset=q.with_clause.pos,
                )
        if self.tok.is_kw("GROUP"):
            q.group_by_pos = self.advance().offset
            self.expect_kw("BY")
            q.group_by = [self.group_item()]
            while self.match(T.COMMA):
                q.group_by.append(self.group_item())
            if self.match_kw("HAVING"):
                q.having = self.condition()
        if self.match_kw("ORDER"):
            self.expect_kw("BY")
            q.order_by = [self.order_item()]
            while self.match(T.COMMA):
                q.order_by.append(self.order_item())
        if self.match_kw("LIMIT"):
            q.limit = self.count_value("LIMIT")
        if self.match_kw("OFFSET"):
            q.offset = self.count_value("OFFSET")
        if self.match_kw("FOR"):
            q.for_clause = [self.ident()]
            while self.match(T.COMMA):
                q.for_clause.append(self.ident())
            for word in q.for_clause:
                if word.upper not in ("VIEW", "REFERENCE", "UPDATE"):
                    raise self.error(f"unexpected token: '{word.name}'", offset=word.pos)
        if self.tok.is_kw("UPDATE", "ALL"):
            raise self.error(
                f"{self.tok.text.upper()} {self.peek().text.upper()} is not supported by the local org; "
                "remove it.",
            )
        q.end = self.tok.offset
        return q

    def count_value(self, clause: str) -> ast.Literal:
        tok = self.tok
        if tok.kind is T.NUMBER and not (isinstance(tok.value, int) and tok.value >= 0):
            raise self.error(
                f"{clause} takes a whole number from 0 to {MAX_INTEGER:,} (got {tok.text[:40]}).", tok
            )
        if tok.kind is not T.NUMBER or not isinstance(tok.value, int):
            if tok.kind is T.COLON:
                raise self.error("Bind variables are only allowed in Apex code", tok)
            raise self.unexpected()
        self.advance()
        return ast.Literal(tok.offset, "number", tok.value, tok.text)

    # -- select list --------------------------------------------------------------------------------------

    def select_list(self) -> list[ast.SelectItem]:
        items = [self.select_item()]
        while self.match(T.COMMA):
            items.append(self.select_item())
        return items

    def select_item(self) -> ast.SelectItem:
        tok = self.tok
        if tok.kind is T.LPAREN:
            self.advance()
            if not self.tok.is_kw("SELECT"):
                raise self.unexpected()
            self.enter(tok)
            sub = self.query()
            self.expect(T.RPAREN)
            self.leave()
            return ast.SelectItem(tok.offset, ast.SubQuery(tok.offset, sub))
        if tok.is_kw("TYPEOF"):
            raise self.error(
                "TYPEOF is not supported by the local org (it has no polymorphic lookups); "
                "select the lookup's fields by relationship name instead.",
                tok,
            )
        if tok.kind is not T.IDENT or tok.upper == "FROM":
            raise self.unexpected()
        expr = self.expression()
        alias = None
        if self.tok.kind is T.IDENT and self.tok.upper not in CLAUSE_WORDS:
            alias = self.ident()
        return ast.SelectItem(tok.offset, expr, alias)

    def expression(self) -> ast.Expr:
        """A field path or a function call (possibly nested: `DAY_ONLY(convertTimezone(CreatedDate))`)."""
        tok = self.tok
        if tok.kind is not T.IDENT:
            if tok.kind is T.COLON:
                raise self.error("Bind variables are only allowed in Apex code", tok)
            raise self.unexpected()
        if self.peek().kind is T.LPAREN:
            name = self.ident()
            self.enter(self.advance())  # (
            args: list[ast.Expr] = []
            if self.tok.kind is not T.RPAREN:
                args.append(self.expression())
                while self.match(T.COMMA):
                    args.append(self.expression())
            close = self.expect(T.RPAREN)
            self.leave()
            return ast.Call(tok.offset, name, args, close.end)
        parts = [self.ident()]
        while self.tok.kind is T.DOT:
            self.advance()
            if self.tok.kind is not T.IDENT:
                raise self.unexpected()
            parts.append(self.ident())
        return ast.FieldPath(tok.offset, parts)

    def group_item(self) -> ast.Expr:
        if self.tok.is_kw("ROLLUP", "CUBE") and self.peek().kind is T.LPAREN:
            raise self.error(
                f"GROUP BY {self.tok.text.upper()} is not supported by the local org; group by plain fields "
                "and add subtotals yourself.",
            )
        return self.expression()

    def order_item(self) -> ast.OrderItem:
        start = self.tok.offset
        expr = self.expression()
        item = ast.OrderItem(start, expr)
        if self.match_kw("DESC"):
            item.descending = True
        else:
            self.match_kw("ASC")
        if self.match_kw("NULLS"):
            which = self.match_kw("FIRST", "LAST")
            if which is None:
                raise self.unexpected()
            item.nulls = which.text.upper()
        return item
