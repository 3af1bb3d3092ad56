"""State and helpers shared by the compiler's mixins (`filters.py`, `functions.py`, `to_sql.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from orgs.local.soql import ast
from orgs.local.soql.errors import SoqlError, SoqlSemanticError
from orgs.local.soql.scope import Scope
from schemas.model import FieldSpec, OrgModel


@dataclass(frozen=True)
class Operand:
    """A compiled value expression: its SQL and what it compares like."""

    sql: str
    kind: str  # id | text | number | boolean | date | datetime
    type_name: str  # Salesforce's name for the type, used in messages
    nullable: bool
    text: str
    pos: int
    field: FieldSpec | None = None
    key: tuple[str, ...] = ()  # identity, for GROUP BY matching
    aggregate: bool = False


class CompilerBase:
    def __init__(self, model: OrgModel, today: date, source: str) -> None:
        self.model = model
        self.today = today
        self.source = source
        self.params: dict[str, Any] = {}
        self.group_keys: set[tuple[str, ...]] = set()
        self.demote_ranges = False  # write date range columns as `+col` (see to_sql.has_selective_lookup)

    # provided by the mixins / to_sql.Compiler
    def unsupported(self, pos: int, what: str, hint: str = "") -> SoqlError:
        raise NotImplementedError

    def function_error(self, call: ast.Call) -> SoqlError:
        raise NotImplementedError

    def aggregate(self, call: ast.Call, scope: Scope) -> Operand:
        raise NotImplementedError

    def date_function(self, call: ast.Call, scope: Scope) -> Operand:
        raise NotImplementedError

    def semi_join_query(self, q: ast.Query, outer: Scope) -> str:
        raise NotImplementedError

    # shared helpers
    def malformed(self, detail: str, pos: int) -> SoqlSemanticError:
        return SoqlSemanticError(detail, self.source, pos, error_code="MALFORMED_QUERY")

    def semantic(self, detail: str, pos: int, code: str) -> SoqlSemanticError:
        return SoqlSemanticError(detail, self.source, pos, error_code=code)

    def param(self, value: Any) -> str:
        """A new bound parameter holding `value` (its `:name` goes into the SQL text)."""
        name = f"p{len(self.params)}"
        self.params[name] = value
        return f":{name}"

    def text_of(self, node: ast.Call) -> str:
        return self.source[node.pos : node.end]
