"""Errors of the embedded org, shaped like the errors a real Salesforce org returns.

Every error knows its HTTP status and Salesforce `errorCode`; the REST layer turns it into the JSON list
`[{"message": ..., "errorCode": ...}]` that simple-salesforce maps to its exceptions. Query errors carry
the position in the query (line, column, offset) and render Salesforce's caret message:

```
<the query line (or a window of it)>
<spaces>^
ERROR at Row:<line>:Column:<column>
<what is wrong>
```
"""

from __future__ import annotations

from html import escape
from typing import Any, ClassVar, Unpack

import orjson

from schemas.errors import Terminal, Where

WINDOW = 60  # characters shown either side of the error in long query lines


JSON_TYPE = "application/json;charset=UTF-8"
XML_TYPE = "text/xml;charset=UTF-8"
SOAP_PREFIX = "/services/Soap/"


class OrgApiError(Terminal):
    """An error the local org answers with: HTTP status + Salesforce errorCode + message.

    `close_connection`: the connection is closed after the answer (the request was not read whole)."""

    status: int = 400
    default_code = "BAD_REQUEST"
    close_connection: bool = False

    FIELDS: ClassVar[tuple[str, ...]] = ("error_code", "status")

    def __init__(
        self,
        message: str,
        *,
        error_code: str | None = None,
        status: int | None = None,
        close_connection: bool | None = None,
        **where: Unpack[Where],
    ) -> None:
        code = error_code or self.default_code
        super().__init__(message, **where)
        self.error_code = code
        if close_connection is not None:
            self.close_connection = close_connection
        if status is not None:
            self.status = status

    def to_json(self) -> list[dict[str, Any]]:
        return [{"message": self.message, "errorCode": self.error_code}]


_SOAP_FAULT = (
    '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope '
    'xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:sf="urn:fault.partner.soap.sforce.com" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body><soapenv:Fault>'
    "<faultcode>{code}</faultcode><faultstring>{code}: {message}</faultstring><detail>"
    '<sf:LoginFault xsi:type="sf:LoginFault"><sf:exceptionCode>{code}</sf:exceptionCode>'
    "<sf:exceptionMessage>{message}</sf:exceptionMessage></sf:LoginFault></detail></soapenv:Fault>"
    "</soapenv:Body></soapenv:Envelope>"
)


def error_body(exc: OrgApiError, path: str) -> tuple[bytes, str]:
    """The body and media type of an error answer: a SOAP fault on the SOAP routes, Salesforce's JSON
    error list everywhere else. (Every error the local org answers is rendered here.)"""
    if path.startswith(SOAP_PREFIX):
        text = _SOAP_FAULT.format(code=escape(exc.error_code), message=escape(exc.message))
        return text.encode("utf-8", "surrogatepass"), XML_TYPE
    try:
        return orjson.dumps(exc.to_json()), JSON_TYPE
    except orjson.JSONEncodeError:  # text that is not UTF-8 (a lone surrogate) echoed in the message
        clean = exc.message.encode("utf-8", "replace").decode("utf-8")
        return orjson.dumps([{"message": clean, "errorCode": exc.error_code}]), JSON_TYPE


class NotFound(OrgApiError):
    status = 404
    default_code = "NOT_FOUND"

    def __init__(
        self, message: str = "The requested resource does not exist", **where: Unpack[Where]
    ) -> None:
        super().__init__(message, **where)


class InvalidSession(OrgApiError):
    status = 401
    default_code = "INVALID_SESSION_ID"

    def __init__(self, message: str = "Session expired or invalid", **where: Unpack[Where]) -> None:
        super().__init__(message, **where)


def caret_snippet(source: str, offset: int) -> tuple[int, int, str]:
    """(line, column, snippet) for a 0-based offset: the line (or a window of a long line) and a caret.

    Lines and columns are 1-based, as in Salesforce's `ERROR at Row:1:Column:12`.
    """
    offset = max(0, min(offset, len(source)))
    line = source.count("\n", 0, offset) + 1
    start = source.rfind("\n", 0, offset) + 1
    end = source.find("\n", offset)
    if end < 0:
        end = len(source)
    text = source[start:end].rstrip("\r")
    col = offset - start + 1
    caret_at = col - 1
    if len(text) > 2 * WINDOW:
        lo = max(0, caret_at - WINDOW)
        hi = min(len(text), caret_at + WINDOW)
        text = text[lo:hi]
        caret_at -= lo
    # tabs keep their width under the caret so it lines up in a terminal
    pad = "".join("\t" if ch == "\t" else " " for ch in text[:caret_at])
    return line, col, f"{text}\n{pad}^"


class QueryError(OrgApiError):
    """An error located in a SOQL or SOSL text (line, column and offset are 1-, 1- and 0-based)."""

    FIELDS: ClassVar[tuple[str, ...]] = ("detail", "col", "offset", "snippet")

    default_code = "MALFORMED_QUERY"

    def __init__(self, detail: str, source: str, offset: int, *, error_code: str | None = None) -> None:
        line, col, snippet = caret_snippet(source, offset)
        message = f"\n{snippet}\nERROR at Row:{line}:Column:{col}\n{detail}"
        super().__init__(message, error_code=error_code, line=line)
        self.detail = detail
        self.source = source
        self.line = line
        self.col = col
        self.offset = offset
        self.snippet = snippet
