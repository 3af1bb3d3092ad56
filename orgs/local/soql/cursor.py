"""The parser's token cursor and its error type (shared by `parser.py` and `conditions.py`)."""

from __future__ import annotations

from orgs.local.soql import ast
from orgs.local.soql.errors import SoqlError
from orgs.local.soql.limits import MAX_NESTING
from orgs.local.soql.tokens import T, Token, expand_run


class SoqlParseError(SoqlError):
    """The tokens do not form a SOQL query (a missing clause, a token out of place)."""


class TokenCursor:
    """Moves over a token list; every error names the offending token's position."""

    def __init__(self, source: str, tokens: list[Token]) -> None:
        self.source = source
        self.tokens = tokens
        self.i = 0
        self.depth = 0  # nesting of parentheses, NOTs, function calls and subqueries

    def enter(self, tok: Token) -> None:
        """One level deeper (at `tok`); QUERY_TOO_COMPLICATED beyond MAX_NESTING levels."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise SoqlParseError(
                f"Query is too complicated: more than {MAX_NESTING} levels of nested parentheses, NOTs, "
                "function calls or subqueries. Flatten the conditions (a OR b OR c needs no parentheses).",
                self.source,
                tok.offset,
                error_code="QUERY_TOO_COMPLICATED",
            )

    def leave(self) -> None:
        self.depth -= 1

    # productions the grammar modules provide
    def query(self) -> ast.Query:
        raise NotImplementedError

    def expression(self) -> ast.Expr:
        raise NotImplementedError

    @property
    def tok(self) -> Token:
        tok = self.tokens[self.i]
        return self.expand(self.i) if tok.kind is T.RUN else tok

    def peek(self, ahead: int = 1) -> Token:
        at = min(self.i + ahead, len(self.tokens) - 1)
        tok = self.tokens[at]
        return self.expand(at) if tok.kind is T.RUN else tok

    def advance(self) -> Token:
        tok = self.tok
        if tok.kind is not T.EOF:
            self.i += 1
        return tok

    def expand(self, at: int) -> Token:
        """The RUN token at `at` replaced by its STRING and COMMA tokens (`tokenize_compact`: only an IN
        list reads a run whole); the first of them."""
        self.tokens[at : at + 1] = expand_run(self.source, self.tokens[at])
        return self.tokens[at]

    def match_kw(self, *words: str) -> Token | None:
        if self.tok.is_kw(*words):
            return self.advance()
        return None

    def match(self, kind: T) -> Token | None:
        if self.tok.kind is kind:
            return self.advance()
        return None

    def error(self, detail: str, tok: Token | None = None, offset: int | None = None) -> SoqlParseError:
        at = offset if offset is not None else (tok or self.tok).offset
        return SoqlParseError(detail, self.source, at)

    def unexpected(self, tok: Token | None = None) -> SoqlParseError:
        tok = tok or self.tok
        shown = "<EOF>" if tok.kind is T.EOF else tok.text
        return self.error(f"unexpected token: '{shown}'", tok)

    def expect_kw(self, word: str) -> Token:
        tok = self.match_kw(word)
        if tok is None:
            raise self.unexpected()
        return tok

    def expect(self, kind: T) -> Token:
        tok = self.match(kind)
        if tok is None:
            raise self.unexpected()
        return tok

    def ident(self) -> ast.Ident:
        tok = self.tok
        if tok.kind is not T.IDENT:
            raise self.unexpected()
        self.advance()
        return ast.Ident(tok.offset, tok.text)
