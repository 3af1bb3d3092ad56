"""SOQL text → tokens, each with its line, column and offset.

Keywords are not special here: every word is an IDENT and the parser decides, case-insensitively, what it
is (SOQL keywords can be field names in other positions). Date and datetime literals are recognised here
because they are unquoted (`2024-01-05`, `2024-01-05T10:00:00Z`, `...+02:00`).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone
from enum import Enum
from typing import Any, NamedTuple

from orgs.local.soql.errors import SoqlError
from orgs.local.soql.limits import MAX_INTEGER, MAX_NUMBER_DIGITS, MAX_STATEMENT_CHARS


class SoqlTokenError(SoqlError):
    """The text cannot be split into SOQL tokens (a stray character, an unclosed string, a bad literal)."""


class T(Enum):
    IDENT = "identifier"
    STRING = "string"
    NUMBER = "number"
    DATE = "date"
    DATETIME = "datetime"
    LPAREN = "("
    RPAREN = ")"
    COMMA = ","
    DOT = "."
    COLON = ":"
    OP = "operator"
    EOF = "end of query"
    # A run of plain strings right after `(` (`'a', 'b', ...`: an IN list of ids), one token for the
    # parser (`tokenize_compact`); `expand_run` gives its STRING and COMMA tokens. Never in `tokenize`.
    RUN = "string list"


class Token(NamedTuple):
    """One token (immutable; a named tuple: built several times faster than a frozen dataclass, and a query
    with a long IN list has thousands of them)."""

    kind: T
    text: str  # exactly as written
    value: Any  # decoded: str for IDENT/STRING, int|float for NUMBER, date/datetime for literals
    offset: int  # 0-based offset of the first character
    end: int  # 0-based offset just after the token
    line: int  # 1-based
    col: int  # 1-based

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind is T.IDENT else ""

    def is_kw(self, *words: str) -> bool:
        return self.kind is T.IDENT and self.text.upper() in words


_PLAIN_STRING = re.compile(r"'([^'\\\n]*)'")
# a list of plain strings on one line (`'a', 'b', ...`: the long IN lists of ids)
_STRING_RUN = re.compile(r"'[^'\\\n]*'(?:[ \t]*,[ \t]*'[^'\\\n]*')+")
_new_token = tuple.__new__
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(r"T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?")
_ZONE = re.compile(r"Z|z|([+-])([0-9]{2}):?([0-9]{2})")
_OPS = ("!=", "<>", "<=", ">=", "=", "<", ">")
_SIMPLE = {"(": T.LPAREN, ")": T.RPAREN, ",": T.COMMA, ".": T.DOT, ":": T.COLON}
_ESCAPES = {"'": "'", '"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}
_KEEP_ESCAPED = {"%", "_"}  # only meaningful in LIKE patterns: kept as backslash + char


def tokenize(source: str, start: int = 0) -> list[Token]:
    """All tokens of `source` from offset `start`, ending with an EOF token.

    Raises SoqlTokenError with the position. (SOSL tokenizes what follows its `FIND {...}` this way.)
    """
    check_length(source, "SOQL")
    return _Lexer(source, start).run()


def tokenize_compact(source: str) -> list[Token]:
    """`tokenize`, except that a run of two or more plain strings right after `(` is one RUN token (the
    parser reads an IN list of 2,000 ids from it without 4,000 tokens; `expand_run` gives them when
    anything else meets it)."""
    check_length(source, "SOQL")
    return _Lexer(source, compact=True).run()


_RUN_ITEM = re.compile(r"'([^'\\\n]*)'([ \t]*,[ \t]*)?")


def run_items(source: str, run: Token) -> list[tuple[int, str]]:
    """(offset, value) of each string of a RUN token, in order (the values as `string_run` decodes them:
    plain strings have no escapes)."""
    out: list[tuple[int, str]] = []
    s = run.offset
    for value, sep in _RUN_ITEM.findall(source, run.offset, run.end):
        out.append((s, value))
        s += len(value) + 2 + len(sep)
    return out


def expand_run(source: str, run: Token) -> list[Token]:
    """The STRING and COMMA tokens `tokenize` gives for the text of a RUN token."""
    lexer = _Lexer(source, run.offset)
    lexer.line, lexer.line_start = run.line, run.offset - run.col + 1
    lexer.string_run(run.end)
    return lexer.out


def check_length(source: str, language: str, code: str = "MALFORMED_QUERY") -> None:
    """Salesforce's statement length limit (100,000 characters by default)."""
    if len(source) > MAX_STATEMENT_CHARS:
        raise SoqlTokenError(
            f"{language} statements cannot exceed {MAX_STATEMENT_CHARS:,} characters; this one has "
            f"{len(source):,}. Split it into several queries (e.g. chunks of a long IN list).",
            source,
            MAX_STATEMENT_CHARS,
            error_code=code,
        )


def _is_digit(ch: str) -> bool:
    return "0" <= ch <= "9"


def _starts_ident(ch: str) -> bool:
    # names are ASCII: a fullwidth or Cyrillic letter is a stray character, as in Salesforce
    return ("a" <= ch <= "z") or ("A" <= ch <= "Z") or ch == "_"


def _no_viable(ch: str) -> str:
    """The character as an error shows it: control characters escaped (`\\x00`)."""
    return ch if ch.isprintable() else repr(ch)[1:-1]


class _Lexer:
    def __init__(self, source: str, start: int = 0, compact: bool = False) -> None:
        self.compact = compact
        self.src = source
        self.pos = start
        self.line = source.count("\n", 0, start) + 1
        self.line_start = source.rfind("\n", 0, start) + 1
        self.out: list[Token] = []

    def fail(self, detail: str, offset: int) -> SoqlTokenError:
        return SoqlTokenError(detail, self.src, offset)

    def emit(self, kind: T, start: int, end: int, value: Any) -> None:
        self.out.append(
            Token(kind, self.src[start:end], value, start, end, self.line, start - self.line_start + 1)
        )

    def run(self) -> list[Token]:
        src = self.src
        n = len(src)
        while self.pos < n:
            ch = src[self.pos]
            if ch == "\n":
                self.pos += 1
                self.line += 1
                self.line_start = self.pos
                continue
            if ch in " \t\r\f\v":
                self.pos += 1
                continue
            start = self.pos
            if ch == "'":
                run = _STRING_RUN.match(src, start)
                if run is not None and self.compact and self.out and self.out[-1].kind is T.LPAREN:
                    self.pos = run.end()
                    self.emit(T.RUN, start, self.pos, None)
                elif run is not None:
                    self.string_run(run.end())
                else:
                    self.string()
            elif _is_digit(ch):
                self.number_or_date()
            elif ch == "-" or ch == "+":
                if start + 1 < n and _is_digit(src[start + 1]):
                    self.number_or_date()
                else:
                    raise self.fail(
                        f"line {self.line}:{start - self.line_start} no viable alternative at character '{ch}'",
                        start,
                    )
            elif _starts_ident(ch):
                m = _IDENT.match(src, start)  # always matches: ch starts an identifier
                self.pos = m.end() if m is not None else start + 1
                self.emit(T.IDENT, start, self.pos, src[start : self.pos])
            elif ch in _SIMPLE:
                self.pos += 1
                self.emit(_SIMPLE[ch], start, self.pos, ch)
            elif ch in "!<>=":
                for op in _OPS:
                    if src.startswith(op, start):
                        self.pos += len(op)
                        self.emit(T.OP, start, self.pos, "!=" if op == "<>" else op)
                        break
                else:
                    raise self.fail(
                        f"line {self.line}:{start - self.line_start} no viable alternative at character '{ch}'",
                        start,
                    )
            else:
                raise self.fail(
                    f"line {self.line}:{start - self.line_start} no viable alternative at character "
                    f"'{_no_viable(ch)}'",
                    start,
                )
        self.out.append(Token(T.EOF, "", None, n, n, self.line, n - self.line_start + 1))
        return self.out

    def string_run(self, end: int) -> None:
        """Plain strings and commas up to `end` (no line breaks, no escapes): the tokens `string` and the
        comma branch of `run` give them, in one pass. Between two strings of a run there is exactly one comma
        (`_STRING_RUN`), found with `str.index`; tokens are made with `tuple.__new__` (a named tuple's own
        `__new__` is a Python function): a long IN list of ids has thousands of them."""
        out = self.out
        line = self.line
        col0 = 1 - self.line_start
        src = self.src
        prev = -1
        for part in _PLAIN_STRING.finditer(src, self.pos, end):
            s, e = part.span()
            if prev >= 0:
                c = src.index(",", prev, s)
                out.append(_new_token(Token, (T.COMMA, ",", ",", c, c + 1, line, c + col0)))
            out.append(_new_token(Token, (T.STRING, src[s:e], part.group(1), s, e, line, s + col0)))
            prev = e
        self.pos = end

    def string(self) -> None:
        src = self.src
        start = self.pos
        plain = _PLAIN_STRING.match(src, start)
        if plain is not None:  # no escapes, no line breaks: the common case, read in one step
            self.pos = plain.end()
            self.out.append(
                Token(
                    T.STRING,
                    plain.group(),
                    plain.group(1),
                    start,
                    self.pos,
                    self.line,
                    start - self.line_start + 1,
                )
            )
            return
        i = start + 1
        chars: list[str] = []
        while True:
            if i >= len(src):
                raise self.fail(
                    "Invalid string literal: it is never closed. End it with a single quote (') and escape "
                    "quotes inside it as \\'.",
                    start,
                )
            ch = src[i]
            if ch == "'":
                break
            if ch == "\\":
                if i + 1 >= len(src):
                    raise self.fail("Invalid string literal: it ends with a lone backslash.", i)
                nxt = src[i + 1]
                if nxt in _ESCAPES:
                    chars.append(_ESCAPES[nxt])
                elif nxt in _KEEP_ESCAPED:
                    chars.append("\\" + nxt)
                else:
                    raise self.fail(
                        f"Invalid string literal '{src[start + 1 : i + 2]}'. Illegal character sequence "
                        f"'\\{nxt}' in string literal.",
                        i,
                    )
                i += 2
                continue
            if ch == "\n":
                self.line += 1
                self.line_start = i + 1
            chars.append(ch)
            i += 1
        self.pos = i + 1
        tok_line = src.count("\n", 0, start) + 1
        tok_col = start - (src.rfind("\n", 0, start) + 1) + 1
        self.out.append(
            Token(T.STRING, src[start : self.pos], "".join(chars), start, self.pos, tok_line, tok_col)
        )

    def number_or_date(self) -> None:
        src = self.src
        start = self.pos
        sign = ""
        if src[start] in "+-":
            sign = src[start]
            start_digits = start + 1
        else:
            start_digits = start
        dm = _DATE.match(src, start_digits) if not sign else None
        if dm:
            self.date_literal(start, dm)
            return
        m = _NUMBER.match(src, start_digits)
        if m is None:  # pragma: no cover - callers only come here on a digit
            raise self.fail(f"line {self.line}:{start - self.line_start} no viable alternative", start)
        end = m.end()
        if end < len(src) and (src[end].isalnum() or src[end] == "_"):
            raise self.fail(
                f"line {self.line}:{end - self.line_start} no viable alternative at character "
                f"'{_no_viable(src[end])}'",
                end,
            )
        text = src[start:end]
        whole = m.group().partition(".")[0].lstrip("0")
        if len(whole) > MAX_NUMBER_DIGITS:
            raise self.fail(
                f"Number out of range: {text[:20]}… has {len(whole):,} digits; numbers in SOQL are at most "
                "about 1.8E308.",
                start,
            )
        value: int | float
        if "." in text or len(whole) > 19 or abs(int(text)) > MAX_INTEGER:
            value = float(text)  # beyond SQLite's INTEGER: compared as a double
        else:
            value = int(text)
        self.pos = end
        self.emit(T.NUMBER, start, end, value)

    def date_literal(self, start: int, dm: re.Match[str]) -> None:
        src = self.src
        y, mo, d = (int(g) for g in dm.groups())
        try:
            day = date(y, mo, d)
        except ValueError:
            raise self.fail(f"Invalid date: {dm.group()}. Dates are written YYYY-MM-DD.", start) from None
        end = dm.end()
        tm = _TIME.match(src, end)
        if not tm:
            if end < len(src) and (src[end].isalnum() or src[end] == "_"):
                raise self.fail(
                    f"line {self.line}:{end - self.line_start} no viable alternative at character "
                    f"'{_no_viable(src[end])}'",
                    end,
                )
            self.pos = end
            self.emit(T.DATE, start, end, day)
            return
        hh, mi, ss = (int(g) for g in tm.groups()[:3])
        frac = tm.group(4) or ""
        zend = tm.end()
        zm = _ZONE.match(src, zend)
        if not zm:
            shown = src[zend] if zend < len(src) else "<EOF>"
            raise self.fail(
                f"line {self.line}:{zend - self.line_start} no viable alternative at character '{shown}'",
                zend,
            )

        def invalid() -> SoqlTokenError:
            return self.fail(
                f"Invalid datetime: {src[start : zm.end()]}. Datetimes are written YYYY-MM-DDThh:mm:ssZ or "
                "with an offset from -23:59 to +23:59 (+hh:mm), between 0001-01-01 and 9999-12-31 in UTC.",
                start,
            )

        tz = UTC
        if zm.group(1):
            if int(zm.group(2)) > 23 or int(zm.group(3)) > 59:
                raise invalid()
            minutes = int(zm.group(2)) * 60 + int(zm.group(3))
            tz = timezone(timedelta(minutes=minutes if zm.group(1) == "+" else -minutes))
        micro = int((frac[1:] + "000000")[:6]) if frac else 0
        try:
            value = datetime(y, mo, d, hh, mi, ss, micro, tzinfo=tz).astimezone(UTC)
        except (ValueError, OverflowError):
            raise invalid() from None
        end = zm.end()
        if end < len(src) and (src[end].isalnum() or src[end] == "_"):
            raise self.fail(
                f"line {self.line}:{end - self.line_start} no viable alternative at character "
                f"'{_no_viable(src[end])}'",
                end,
            )
        self.pos = end
        self.emit(T.DATETIME, start, end, value)
