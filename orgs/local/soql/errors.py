"""The SOQL compiler's error root. Each stage raises its own subclass (see tokens, parser, to_sql)."""

from __future__ import annotations

from orgs.local.errors import QueryError


class SoqlError(QueryError):
    """A SOQL text the local org refuses, located by line/column/offset with a caret snippet."""


class SoqlSemanticError(SoqlError):
    """The query is well formed but names something the org model does not have, or mixes types.

    Raised while resolving names against the org model (`scope.py`) and while compiling (`to_sql.py`);
    the Salesforce code says which: INVALID_FIELD, INVALID_TYPE, INVALID_QUERY_FILTER_OPERATOR, ...
    """

    default_code = "INVALID_FIELD"
