"""WHERE and HAVING conditions, as a mixin of the SOQL parser.

SOQL's grammar allows only a homogeneous chain per level: `a AND b AND c` or `a OR b OR c`; mixing them
(`a AND b OR c`) is a syntax error unless parenthesised. The local org enforces that too, so a query
never gets an answer that depends on an operator precedence Salesforce does not have.
"""

from __future__ import annotations

from orgs.local.soql import ast, dates
from orgs.local.soql.cursor import TokenCursor
from orgs.local.soql.limits import MAX_STRING_CHARS
from orgs.local.soql.tokens import T, run_items

LITERAL_KINDS = {T.STRING: "string", T.NUMBER: "number", T.DATE: "date", T.DATETIME: "datetime"}


class ConditionParser(TokenCursor):
    def condition(self) -> ast.Cond:
        start = self.tok.offset
        first = self.unary()
        if not self.tok.is_kw("AND", "OR"):
            return first
        op = self.tok.upper
        items = [first]
        while self.tok.is_kw("AND", "OR"):
            if self.tok.upper != op:
                raise self.unexpected()
            self.advance()
            items.append(self.unary())
        return ast.BoolOp(start, op, items)

    def unary(self) -> ast.Cond:
        tok = self.tok
        if tok.is_kw("NOT"):
            self.advance()
            self.enter(tok)
            node = ast.Not(tok.offset, self.unary())
            self.leave()
            return node
        if tok.kind is T.LPAREN:
            self.advance()
            self.enter(tok)
            inner = self.condition()
            self.expect(T.RPAREN)
            self.leave()
            return inner
        return self.field_expression()

    def field_expression(self) -> ast.Cond:
        start = self.tok.offset
        left = self.expression()
        tok = self.tok
        if tok.kind is T.OP:
            self.advance()
            return ast.Compare(start, left, tok.value, self.value(), op_pos=tok.offset)
        if tok.is_kw("LIKE"):
            self.advance()
            return ast.Like(start, left, self.value())
        if tok.is_kw("IN") or (tok.is_kw("NOT") and self.peek().is_kw("IN")):
            negated = bool(self.match_kw("NOT"))
            self.advance()  # IN
            self.expect(T.LPAREN)
            if self.tokens[self.i].is_kw("SELECT"):  # not `tok`: a RUN (an id list) stays whole
                self.enter(self.tok)
                sub = self.query()
                self.expect(T.RPAREN)
                self.leave()
                return ast.InQuery(start, left, sub, negated)
            values = self.value_list()
            return ast.InList(start, left, values, negated)
        if tok.is_kw("INCLUDES", "EXCLUDES"):
            self.advance()
            self.expect(T.LPAREN)
            values = self.value_list()
            return ast.Includes(start, left, values, excludes=tok.upper == "EXCLUDES")
        raise self.unexpected()

    def value_list(self) -> list[ast.Value]:
        run = self.tokens[self.i]
        if run.kind is T.RUN:
            # a run of plain strings (an IN list of ids) read whole: one Literal per string, as the
            # general path below gives them from the STRING tokens; a string too long for a WHERE clause
            # takes the general path (which reports it)
            items = run_items(self.source, run)
            if all(len(v) <= MAX_STRING_CHARS for _, v in items):
                self.i += 1
                src = self.source
                run_values: list[ast.Value] = [
                    ast.Literal(s, "string", v, src[s : s + len(v) + 2]) for s, v in items
                ]
                while self.match(T.COMMA):
                    run_values.append(self.value())
                self.expect(T.RPAREN)
                return run_values
        values = [self.value()]
        # a run of `, 'string'` (long IN lists of ids) taken in one loop; anything else as `value` reads it
        tokens, i = self.tokens, self.i
        while tokens[i].kind is T.COMMA:
            tok = tokens[i + 1]
            if tok.kind is not T.STRING or len(tok.value) > MAX_STRING_CHARS:
                break
            values.append(ast.Literal(tok.offset, "string", tok.value, tok.text))
            i += 2
        self.i = i
        while self.match(T.COMMA):
            values.append(self.value())
        self.expect(T.RPAREN)
        return values

    def value(self) -> ast.Value:
        tok = self.tok
        kind = LITERAL_KINDS.get(tok.kind)
        if kind is not None:
            if kind == "string" and len(tok.value) > MAX_STRING_CHARS:
                raise self.error(
                    f"String too long: {len(tok.value):,} characters. Strings in a WHERE clause are at most "
                    f"{MAX_STRING_CHARS:,} characters.",
                    tok,
                )
            self.advance()
            return ast.Literal(tok.offset, kind, tok.value, tok.text)
        if tok.kind is T.COLON:
            raise self.error("Bind variables are only allowed in Apex code", tok)
        if tok.kind is T.IDENT:
            word = tok.upper
            if word in ("TRUE", "FALSE"):
                self.advance()
                return ast.Literal(tok.offset, "boolean", word == "TRUE", tok.text)
            if word == "NULL":
                self.advance()
                return ast.Literal(tok.offset, "null", None, tok.text)
            if word in dates.PLAIN:
                self.advance()
                return ast.DateConst(tok.offset, word, None, tok.text)
            if word in dates.WITH_N:
                self.advance()
                if self.tok.kind is not T.COLON:
                    raise self.error(
                        f"Date literal {word} needs a number of units: write {word}:n (e.g. {word}:30).",
                        self.tok,
                    )
                self.advance()
                num = self.tok
                if num.kind is not T.NUMBER or not isinstance(num.value, int) or num.value < 0:
                    raise self.error(
                        f"Date literal {word} needs a whole number of units after the colon "
                        f"(e.g. {word}:30).",
                        num,
                    )
                self.advance()
                return ast.DateConst(tok.offset, word, num.value, self.source[tok.offset : num.end])
        raise self.unexpected()
