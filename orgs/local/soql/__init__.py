"""SOQL for the local org: a small compiler, text → tokens → tree → parameterised SQL.

`tokens.py` (positions) → `parser.py` + `conditions.py` (the tree in `ast.py`) → `to_sql.py` with
`scope.py` (names → columns and joins), `filters.py` (WHERE/HAVING), `functions.py` (aggregate and date
functions) and `dates.py` (relative date ranges). The result is a `plan.Plan`. `shapes.py` lets the engine
compile queries that differ only in their ids and dates once (`LocalOrg.plan`).
"""

from __future__ import annotations

from datetime import date

from orgs.local.soql.ast import Query
from orgs.local.soql.errors import SoqlError, SoqlSemanticError
from orgs.local.soql.parser import SoqlParseError, parse
from orgs.local.soql.plan import Plan
from orgs.local.soql.to_sql import SoqlUnsupportedError, compile_query
from orgs.local.soql.tokens import SoqlTokenError, tokenize
from schemas.model import OrgModel


def compile_soql(source: str, model: OrgModel, today: date) -> Plan:
    """SOQL text → Plan. Raises a SoqlError subclass located in the text."""
    return compile_query(parse(source), model, today)


__all__ = [
    "Plan",
    "Query",
    "SoqlError",
    "SoqlParseError",
    "SoqlSemanticError",
    "SoqlTokenError",
    "SoqlUnsupportedError",
    "compile_soql",
    "parse",
    "tokenize",
]
