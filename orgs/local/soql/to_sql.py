"""Syntax tree → parameterised SQLite SQL plus a shaping plan (`plan.Plan`).

One `<clause>_sql` method per clause; the WHERE/HAVING conditions are in `filters.py` and the functions in
`functions.py` (mixins). Everything the local org does not implement goes through one hook,
`unsupported()`, so it fails with a located MALFORMED_QUERY instead of answering differently from
Salesforce. Values are always bound parameters (`:p0`, `:p1`, ...); identifiers come from the org model.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from orgs.local.soql import ast
from orgs.local.soql.base import Operand
from orgs.local.soql.errors import SoqlError
from orgs.local.soql.filters import FilterCompiler
from orgs.local.soql.functions import KNOWN_UNSUPPORTED, FunctionCompiler
from orgs.local.soql.plan import AggColumn, ChildOut, ChildPlan, FieldOut, Out, ParentOut, Plan, RecordShape
from orgs.local.soql.scope import (
    NOT_SUPPORTED_TYPE,
    Resolved,
    Scope,
    is_groupable,
    is_long_text,
    quote,
    resolve_object,
)
from schemas.model import ObjectSpec, OrgModel

MAX_OFFSET = 2000
FIELDS_LIMIT = 200
MAX_SEMI_JOINS = 2
UNSUPPORTED = "the local org does not support {what}.{hint}"


class SoqlUnsupportedError(SoqlError):
    """Valid SOQL that the local org does not implement (it refuses rather than answer differently)."""


@dataclass
class _Item:
    """A compiled select item of an aggregate query."""

    operand: Operand
    alias: ast.Ident | None
    grouped_field: bool  # a plain grouped field (named after the field), not an expression


class Compiler(FilterCompiler, FunctionCompiler):
    # -- errors -------------------------------------------------------------------------------------------

    def unsupported(self, pos: int, what: str, hint: str = "") -> SoqlUnsupportedError:
        """The one place that refuses valid SOQL the local org does not implement."""
        text = UNSUPPORTED.format(what=what, hint=f" {hint}" if hint else "")
        return SoqlUnsupportedError(text, self.source, pos)

    def function_error(self, call: ast.Call) -> SoqlError:
        fn = call.fn
        if fn in KNOWN_UNSUPPORTED:
            return self.unsupported(call.pos, KNOWN_UNSUPPORTED[fn])
        if fn == "CONVERTTIMEZONE":
            return self.malformed("convertTimezone() can only be used inside a date function.", call.pos)
        if fn == "FIELDS":
            return self.malformed("FIELDS() can only be used in the SELECT list.", call.pos)
        return self.malformed(f"Unknown function {call.name.name}()", call.pos)

    # -- entry --------------------------------------------------------------------------------------------

    def compile(self, q: ast.Query) -> Plan:
        spec = resolve_object(self.model, q.sobject, self.source)
        scope = Scope(self.model, spec, "t0", self.source, q.alias.name if q.alias else None)
        self.check_clauses(q)
        items = q.select
        count_items = [
            i for i in items if isinstance(i.expr, ast.Call) and i.expr.fn == "COUNT" and not i.expr.args
        ]
        if count_items:
            return self.count_query(q, scope, count_items[0])
        is_aggregate = bool(q.group_by) or any(
            isinstance(i.expr, ast.Call) and i.expr.is_aggregate for i in items
        )
        if is_aggregate:
            if q.limit is not None and not q.group_by:
                raise self.malformed(
                    "A query with an aggregate function and LIMIT must also have a GROUP BY clause; remove LIMIT "
                    "(the query returns one row) or group the rows.",
                    q.limit.pos,
                )
            return self.aggregate_query(q, scope)
        return self.record_query(q, scope)

    def check_clauses(self, q: ast.Query) -> None:
        if q.using_scope is not None and q.using_scope.upper != "EVERYTHING":
            raise self.unsupported(
                q.using_scope.pos,
                f"USING SCOPE {q.using_scope.name}",
                "The local org has no users or sharing; drop the clause (everything is visible).",
            )
        if q.with_clause is not None and q.with_clause.upper not in (
            "SECURITY_ENFORCED",
            "USER_MODE",
            "SYSTEM_MODE",
        ):
            raise self.unsupported(q.with_clause.pos, f"WITH {q.with_clause.name}")
        if q.offset is not None and q.offset.count > MAX_OFFSET:
            raise self.semantic(
                f"Maximum SOQL offset allowed for apiName {self.model.get(q.sobject.name).name} is {MAX_OFFSET}",
                q.offset.pos,
                "NUMBER_OUTSIDE_VALID_RANGE",
            )

    # -- shared clauses -----------------------------------------------------------------------------------

    def where_sql(self, q: ast.Query, scope: Scope) -> str:
        if q.where is None:
            return ""
        semi = _semi_joins(q.where)
        if len(semi) > MAX_SEMI_JOINS:
            raise self.malformed(
                f"Maximum {MAX_SEMI_JOINS} semi join sub-selects are allowed per query",
                semi[MAX_SEMI_JOINS].pos,
            )
        self.demote_ranges = self.has_selective_lookup(q.where, scope)
        try:
            return " WHERE " + self.cond_sql(q.where, scope)
        finally:
            self.demote_ranges = False

    def has_selective_lookup(self, where: ast.Cond, scope: Scope) -> bool:
        """Does the top-level AND chain pin an id or lookup of the FROM object (`= 'x'` or `IN (...)`)?

        SQLite has no histograms (no STAT4), so it guesses that a date range is as selective as such a
        probe and often scans a wide date range instead. When a lookup is pinned, the compiler writes the
        range columns as `+col`, which leaves them out of index selection: a 300-id `OrderItemId__c IN`
        with a four-year CreatedDate window then takes 0.3 ms instead of 3 ms at scale 10.
        """
        items = where.items if isinstance(where, ast.BoolOp) and where.op == "AND" else [where]
        for item in items:
            if isinstance(item, ast.Compare):
                pinned, left = item.op == "=", item.left
            elif isinstance(item, ast.InList):
                pinned, left = not item.negated, item.left
            else:
                continue
            if pinned and isinstance(left, ast.FieldPath):
                r = scope.resolve(left)
                if not r.rels and r.field.type in ("id", "reference"):
                    return True
        return False

    def limit_sql(self, q: ast.Query) -> str:
        sql = ""
        if q.limit is not None:
            sql += f" LIMIT {self.param(q.limit.count)}"
        if q.offset is not None:
            if q.limit is None:
                sql += " LIMIT -1"
            sql += f" OFFSET {self.param(q.offset.count)}"
        return sql

    def from_sql(self, spec: ObjectSpec, scope: Scope) -> str:
        joins = "".join(" " + j for j in scope.join_sql)
        return f" FROM {quote(spec.name)} AS {scope.alias}{joins}"

    def expand_fields(self, q: ast.Query, spec: ObjectSpec, scope: Scope) -> list[ast.SelectItem]:
        """FIELDS(ALL|STANDARD|CUSTOM) replaced by the object's fields, positioned at the call."""
        out: list[ast.SelectItem] = []
        for item in q.select:
            expr = item.expr
            if not (isinstance(expr, ast.Call) and expr.fn == "FIELDS"):
                out.append(item)
                continue
            if (
                len(expr.args) != 1
                or not isinstance(expr.args[0], ast.FieldPath)
                or len(expr.args[0].parts) != 1
            ):
                raise self.malformed("FIELDS() takes ALL, STANDARD or CUSTOM.", expr.pos)
            which = expr.args[0].parts[0].upper
            if which not in ("ALL", "STANDARD", "CUSTOM"):
                raise self.malformed(f"unexpected token: '{expr.args[0].parts[0].name}'", expr.args[0].pos)
            if which != "STANDARD" and (q.limit is None or q.limit.count > FIELDS_LIMIT):
                raise self.malformed(
                    f"The SOQL FIELDS function must have a LIMIT of at most {FIELDS_LIMIT}", expr.pos
                )
            if item.alias is not None:
                raise self.malformed("unexpected token: '" + item.alias.name + "'", item.alias.pos)
            for f in spec.fields:
                if which == "ALL" or (which == "CUSTOM") == f.custom:
                    path = ast.FieldPath(expr.pos, [ast.Ident(expr.pos, f.name)])
                    out.append(ast.SelectItem(expr.pos, path))
        return out

    # -- SELECT ... (records) -----------------------------------------------------------------------------

    def record_query(self, q: ast.Query, scope: Scope) -> Plan:
        spec = scope.spec
        cols: list[str] = []
        shape = self.record_shape(q, scope, cols, allow_subqueries=True)
        where = self.where_sql(q, scope)
        order = self.order_sql(q, scope, aggregate=False)
        sql = "SELECT " + ", ".join(cols) + self.from_sql(spec, scope) + where + order + self.limit_sql(q)
        return Plan("records", spec.name, sql, self.params, shape=shape)

    def record_shape(
        self, q: ast.Query, scope: Scope, cols: list[str], allow_subqueries: bool
    ) -> RecordShape:
        spec = scope.spec

        def col(sql: str) -> int:
            if sql in cols:
                return cols.index(sql)
            cols.append(sql)
            return len(cols) - 1

        id_col = col(f'{scope.alias}."Id"')
        root: list[Out] = []
        parents: dict[tuple[str, ...], list[Out]] = {(): root}
        seen: dict[tuple[str, ...], str] = {}
        child_keys: set[str] = set()
        for item in self.expand_fields(q, spec, scope):
            expr = item.expr
            if isinstance(expr, ast.SubQuery):
                if not allow_subqueries:
                    raise self.unsupported(
                        expr.pos, "nested parent-to-child subqueries", "Query each level separately."
                    )
                child = self.child_query(expr.query, scope)
                if child.key.lower() in child_keys:
                    raise self.malformed(f"duplicate field selected: {child.key}", expr.pos)
                child_keys.add(child.key.lower())
                root.append(child)
                continue
            if isinstance(expr, ast.Call):
                if expr.fn in ast.DATE_FUNCTIONS:
                    raise self.malformed(
                        f"Date functions like {expr.name.name}() can only be selected in aggregate queries "
                        "(with GROUP BY)",
                        expr.pos,
                    )
                raise self.function_error(expr)
            assert isinstance(expr, ast.FieldPath)
            if item.alias is not None:
                raise self.malformed("Only aggregate expressions use field aliasing", item.alias.pos)
            r: Resolved = scope.resolve(expr)
            if r.key in seen:
                raise self.malformed(f"duplicate field selected: {r.field.name}", expr.pos)
            seen[r.key] = r.text
            container = root
            for depth in range(1, len(r.rels) + 1):
                rels = r.rels[:depth]
                if rels not in parents:
                    items: list[Out] = []
                    parents[rels] = items
                    container.append(
                        ParentOut(rels[-1], scope.parent_object(rels), col(scope.parent_id(rels)), ())
                    )
                container = parents[rels]
            container.append(FieldOut(r.field.name, col(r.sql), r.field.type == "boolean"))
        return RecordShape(spec.name, id_col, self.freeze(root, parents))

    def freeze(self, root: list[Out], parents: dict[tuple[str, ...], list[Out]]) -> tuple[Out, ...]:
        def build(items: list[Out], prefix: tuple[str, ...]) -> tuple[Out, ...]:
            out: list[Out] = []
            for it in items:
                if isinstance(it, ParentOut):
                    rels = (*prefix, it.key)
                    out.append(ParentOut(it.key, it.sobject, it.id_col, build(parents[rels], rels)))
                else:
                    out.append(it)
            return tuple(out)

        return build(root, ())

    def child_query(self, q: ast.Query, parent: Scope) -> ChildOut:
        rel = None
        for cr in self.model.child_relationships(parent.spec.name):
            if cr.name.lower() == q.sobject.name.lower():
                rel = cr
                break
        if rel is None:
            raise self.semantic(
                f"Didn't understand relationship '{q.sobject.name}' in FROM part of query call. If you are "
                "attempting to use a custom relationship, be sure to append the '__r' after the custom "
                "relationship name. Please reference your WSDL or the describe call for the appropriate names.",
                q.sobject.pos,
                "INVALID_TYPE",
            )
        if q.group_by or any(isinstance(i.expr, ast.Call) and i.expr.is_aggregate for i in q.select):
            raise self.unsupported(q.pos, "aggregate functions in a parent-to-child subquery")
        if q.offset is not None:
            raise self.unsupported(q.offset.pos, "OFFSET in a parent-to-child subquery")
        self.check_clauses(q)
        spec = self.model.get(rel.child)
        scope = parent.child(spec, q.alias.name if q.alias else None)
        cols: list[str] = []
        shape = self.record_shape(q, scope, cols, allow_subqueries=False)
        fk = f"{scope.alias}.{quote(rel.field)}"
        cols.append(fk)
        fk_col = len(cols) - 1
        where = f" WHERE {fk} IN (SELECT value FROM json_each(:parent_ids))"
        if q.where is not None:
            where += " AND " + self.cond_sql(q.where, scope)
        order = self.order_sql(q, scope, aggregate=False)
        sql = "SELECT " + ", ".join(cols) + self.from_sql(spec, scope) + where + order
        limit = q.limit.count if q.limit is not None else None
        return ChildOut(rel.name, ChildPlan(sql, self.params, fk_col, shape, limit))

    def semi_join_query(self, q: ast.Query, outer: Scope) -> str:
        if any(isinstance(n, ast.InQuery) for n in (q.where.walk() if q.where else [])):
            raise self.malformed("Nested semi join sub-selects are not supported", q.pos)
        for clause, pos in (
            ("GROUP BY", q.group_by_pos),
            ("ORDER BY", q.order_by[0].pos if q.order_by else None),
            ("LIMIT", q.limit.pos if q.limit else None),
            ("OFFSET", q.offset.pos if q.offset else None),
        ):
            if pos is not None:
                raise self.unsupported(pos, f"{clause} in a semi join sub-select")
        self.check_clauses(q)
        spec = resolve_object(self.model, q.sobject, self.source)
        scope = outer.child(spec, q.alias.name if q.alias else None)
        if len(q.select) != 1 or not isinstance(q.select[0].expr, ast.FieldPath):
            raise self.malformed(
                "Semi join sub-selects must select exactly one Id or lookup field", q.select[0].pos
            )
        r = scope.resolve(q.select[0].expr)
        if r.rels or r.field.type not in ("id", "reference"):
            raise self.malformed(
                f"Semi join sub-selects must select an Id or lookup field of {spec.name}; '{r.text}' is not one.",
                r.pos,
            )
        where = f" WHERE {r.sql} IS NOT NULL"
        if q.where is not None:
            where += " AND " + self.cond_sql(q.where, scope)
        return f"SELECT {r.sql}" + self.from_sql(spec, scope) + where

    # -- ORDER BY -----------------------------------------------------------------------------------------

    def order_sql(self, q: ast.Query, scope: Scope, aggregate: bool) -> str:
        parts: list[str] = []
        for item in q.order_by:
            expr = item.expr
            if isinstance(expr, ast.FieldPath):
                r = scope.resolve(expr)
                if is_long_text(r.field):
                    raise self.semantic(
                        f"field '{r.field.name}' can not be sorted in a query call", r.pos, "INVALID_FIELD"
                    )
                if aggregate and r.key not in self.group_keys:
                    raise self.malformed(f"Field must be grouped or aggregated: {r.text}", r.pos)
                sql = r.sql
            elif isinstance(expr, ast.Call) and expr.is_aggregate:
                if not aggregate:
                    raise self.malformed(
                        f"Aggregate functions in ORDER BY need GROUP BY: {self.text_of(expr)}", expr.pos
                    )
                sql = self.aggregate(expr, scope).sql
            elif isinstance(expr, ast.Call) and expr.fn in ast.DATE_FUNCTIONS:
                op = self.date_function(expr, scope)
                if op.key not in self.group_keys:
                    raise self.malformed(f"Field must be grouped or aggregated: {op.text}", expr.pos)
                sql = op.sql
            elif isinstance(expr, ast.Call):
                raise self.function_error(expr)
            else:  # pragma: no cover - the parser only makes paths and calls
                raise self.unsupported(item.pos, "this ORDER BY item")
            direction = " DESC" if item.descending else ""
            nulls = f" NULLS {item.nulls}" if item.nulls else ""
            parts.append(f"{sql}{direction}{nulls}")
        if not aggregate:
            parts.append(f"{scope.alias}.rowid")
        return " ORDER BY " + ", ".join(parts) if parts else ""

    # -- SELECT COUNT() -----------------------------------------------------------------------------------

    def count_query(self, q: ast.Query, scope: Scope, item: ast.SelectItem) -> Plan:
        if len(q.select) != 1:
            other = next(i for i in q.select if i is not item)
            raise self.malformed("COUNT() must be the only element in the SELECT list", other.pos)
        if q.group_by:
            raise self.unsupported(q.group_by_pos or q.pos, "COUNT() with GROUP BY", "Use COUNT(Id) instead.")
        if q.order_by:
            raise self.malformed("COUNT() can not be used with ORDER BY", q.order_by[0].pos)
        spec = scope.spec
        where = self.where_sql(q, scope)
        inner = "SELECT 1" + self.from_sql(spec, scope) + where + self.limit_sql(q)
        return Plan("count", spec.name, f"SELECT COUNT(*) FROM ({inner})", self.params)

    # -- SELECT ... GROUP BY (aggregates) -----------------------------------------------------------------

    def aggregate_query(self, q: ast.Query, scope: Scope) -> Plan:
        spec = scope.spec
        group_sql: list[str] = []
        for g in q.group_by:
            op = self.group_operand(g, scope)
            self.group_keys.add(op.key)
            group_sql.append(op.sql)
        items: list[_Item] = []
        for item in self.expand_fields(q, spec, scope):
            expr = item.expr
            if isinstance(expr, ast.SubQuery):
                raise self.unsupported(expr.pos, "parent-to-child subqueries in aggregate queries")
            if isinstance(expr, ast.FieldPath):
                r = scope.resolve(expr)
                if r.key not in self.group_keys:
                    raise self.malformed(f"Field must be grouped or aggregated: {r.text}", expr.pos)
                op = Operand(r.sql, "", "", r.nullable, r.text, r.pos, field=r.field, key=r.key)
                items.append(_Item(op, item.alias, True))
            elif isinstance(expr, ast.Call) and expr.is_aggregate:
                items.append(_Item(self.aggregate(expr, scope), item.alias, False))
            elif isinstance(expr, ast.Call) and expr.fn in ast.DATE_FUNCTIONS:
                op = self.date_function(expr, scope)
                if op.key not in self.group_keys:
                    raise self.malformed(f"Field must be grouped or aggregated: {op.text}", expr.pos)
                items.append(_Item(op, item.alias, False))
            elif isinstance(expr, ast.Call):
                raise self.function_error(expr)
        columns: list[AggColumn] = []
        names: set[str] = set()
        expr_n = 0
        for index, it in enumerate(items):
            if it.alias is not None:
                key = it.alias.name
            elif it.grouped_field:
                assert it.operand.field is not None
                key = it.operand.field.name
            else:
                key = f"expr{expr_n}"
                expr_n += 1
            if key.lower() in names:
                raise self.malformed(f"duplicate alias: {key}", it.alias.pos if it.alias else it.operand.pos)
            names.add(key.lower())
            boolean = it.grouped_field and it.operand.field is not None and it.operand.field.type == "boolean"
            columns.append(AggColumn(key, index, boolean))
        where = self.where_sql(q, scope)
        having = ""
        if q.having is not None:
            having = " HAVING " + self.cond_sql(q.having, scope, having=True)
        order = self.order_sql(q, scope, aggregate=True)
        group = " GROUP BY " + ", ".join(group_sql) if group_sql else ""
        select = ", ".join(it.operand.sql for it in items)
        sql = (
            "SELECT "
            + select
            + self.from_sql(spec, scope)
            + where
            + group
            + having
            + order
            + self.limit_sql(q)
        )
        return Plan("aggregate", spec.name, sql, self.params, columns=tuple(columns))

    def group_operand(self, g: ast.Expr, scope: Scope) -> Operand:
        if isinstance(g, ast.FieldPath):
            r = scope.resolve(g)
            if not is_groupable(r.field):
                hint = (
                    " (group datetimes by a date function such as DAY_ONLY())"
                    if r.field.type == "datetime"
                    else ""
                )
                raise self.semantic(
                    f"field '{r.field.name}' can not be grouped in a query call{hint}", r.pos, "INVALID_FIELD"
                )
            return Operand(r.sql, "", "", r.nullable, r.text, r.pos, field=r.field, key=r.key)
        if isinstance(g, ast.Call) and g.fn in ast.DATE_FUNCTIONS:
            return self.date_function(g, scope)
        if isinstance(g, ast.Call) and g.is_aggregate:
            raise self.malformed(f"Aggregate functions can not be used in GROUP BY: {self.text_of(g)}", g.pos)
        if isinstance(g, ast.Call):
            raise self.function_error(g)
        raise self.unsupported(g.pos, "this GROUP BY item")  # pragma: no cover


def _semi_joins(node: ast.Node) -> list[ast.InQuery]:
    """The semi-joins (`IN (SELECT ...)`) under `node`, depth first as `node.walk()` meets them, without
    walking the values of IN lists (literals; the answer check's lists hold thousands)."""
    if isinstance(node, ast.InList):
        return []
    out = [node] if isinstance(node, ast.InQuery) else []
    for child in node.children():
        out += _semi_joins(child)
    return out


def compile_query(query: ast.Query, model: OrgModel, today: date) -> Plan:
    """Compile a parsed query against the org model, with relative dates evaluated at `today`."""
    return Compiler(model, today, query.source).compile(query)


__all__ = ["NOT_SUPPORTED_TYPE", "Compiler", "SoqlUnsupportedError", "compile_query"]
