"""SQL for SOQL's aggregate and date functions (a mixin of the compiler).

Datetimes are stored in Salesforce's wire form (`2024-01-05T10:00:00.000+0000`, always UTC) and dates as
`YYYY-MM-DD`, so date parts are substrings. The fiscal year starts in January: FISCAL_* = CALENDAR_*.
"""

from __future__ import annotations

from orgs.local.soql import ast
from orgs.local.soql.base import CompilerBase, Operand
from orgs.local.soql.scope import SOAP_TYPE, Resolved, Scope, is_long_text, kind_of

_INT = "CAST({} AS INTEGER)"
DATE_PARTS: dict[str, str] = {
    "CALENDAR_YEAR": _INT.format("substr({c},1,4)"),
    "FISCAL_YEAR": _INT.format("substr({c},1,4)"),
    "CALENDAR_MONTH": _INT.format("substr({c},6,2)"),
    "FISCAL_MONTH": _INT.format("substr({c},6,2)"),
    "CALENDAR_QUARTER": "((" + _INT.format("substr({c},6,2)") + " + 2) / 3)",
    "FISCAL_QUARTER": "((" + _INT.format("substr({c},6,2)") + " + 2) / 3)",
    "DAY_IN_MONTH": _INT.format("substr({c},9,2)"),
    "DAY_IN_WEEK": "(" + _INT.format("strftime('%w', substr({c},1,10))") + " + 1)",
    "DAY_IN_YEAR": _INT.format("strftime('%j', substr({c},1,10))"),
    "WEEK_IN_MONTH": "((" + _INT.format("substr({c},9,2)") + " - 1) / 7 + 1)",
    "WEEK_IN_YEAR": "((" + _INT.format("strftime('%j', substr({c},1,10))") + " - 1) / 7 + 1)",
    "HOUR_IN_DAY": _INT.format("substr({c},12,2)"),
    "DAY_ONLY": "substr({c},1,10)",
}
DATETIME_ONLY = frozenset({"DAY_ONLY", "HOUR_IN_DAY"})
# Functions that exist in SOQL but that the local org refuses (rather than answering differently).
KNOWN_UNSUPPORTED = {
    "TOLABEL": "toLabel() (the local org has no translations; picklist labels equal their values)",
    "FORMAT": "FORMAT() (the local org returns raw values only)",
    "CONVERTCURRENCY": "convertCurrency() (the local org has a single currency)",
    "GROUPING": "GROUPING() (GROUP BY ROLLUP/CUBE are not supported)",
    "DISTANCE": "DISTANCE() (the local org has no geolocation fields)",
    "GEOLOCATION": "GEOLOCATION() (the local org has no geolocation fields)",
}


class FunctionCompiler(CompilerBase):
    def date_function(self, call: ast.Call, scope: Scope) -> Operand:
        fn = call.fn
        if len(call.args) != 1:
            raise self.malformed(f"{call.name.name}() takes exactly one field.", call.pos)
        arg = call.args[0]
        if isinstance(arg, ast.Call) and arg.fn == "CONVERTTIMEZONE":
            if len(arg.args) != 1 or not isinstance(arg.args[0], ast.FieldPath):
                raise self.malformed("convertTimezone() takes exactly one datetime field.", arg.pos)
            arg = arg.args[0]
        if not isinstance(arg, ast.FieldPath):
            raise self.malformed(f"{call.name.name}() takes a date or datetime field.", arg.pos)
        r = scope.resolve(arg)
        if r.field.type not in ("date", "datetime"):
            raise self.semantic(
                f"Invalid date function argument: {call.name.name}() needs a date or datetime field, and "
                f"'{r.text}' is a {r.field.type} field.",
                arg.pos,
                "INVALID_FIELD",
            )
        if fn in DATETIME_ONLY and r.field.type != "datetime":
            raise self.semantic(
                f"Invalid date function argument: {call.name.name}() needs a datetime field, and '{r.text}' "
                "is a date field.",
                arg.pos,
                "INVALID_FIELD",
            )
        sql = DATE_PARTS[fn].format(c=r.sql)
        is_date = fn == "DAY_ONLY"
        return Operand(
            sql=sql,
            kind="date" if is_date else "number",
            type_name="date" if is_date else "int",
            nullable=r.nullable,
            text=self.text_of(call),
            pos=call.pos,
            key=(fn.replace("FISCAL_", "CALENDAR_"), *r.key),
        )

    def aggregate(self, call: ast.Call, scope: Scope) -> Operand:
        fn = call.fn
        text = self.text_of(call)
        if fn == "COUNT" and not call.args:
            raise self.malformed(
                "COUNT() must be the only item in the SELECT list and cannot be used in HAVING or ORDER BY; "
                "use COUNT(Id) there.",
                call.pos,
            )
        if len(call.args) != 1 or not isinstance(call.args[0], ast.FieldPath):
            raise self.malformed(f"{call.name.name}() takes exactly one field.", call.pos)
        r: Resolved = scope.resolve(call.args[0])
        f = r.field
        if (fn in ("SUM", "AVG") and f.type not in ("currency", "double", "int")) or (
            f.type == "boolean" and not (fn == "COUNT" and f.name == "Id")
        ):
            raise self.semantic(
                f"field {f.name} does not support aggregate operator {fn}", r.pos, "INVALID_FIELD"
            )
        if fn in ("MIN", "MAX"):
            if f.type == "boolean" or is_long_text(f):
                raise self.semantic(
                    f"field {f.name} does not support aggregate operator {fn}", r.pos, "INVALID_FIELD"
                )
            if f.type == "picklist":
                raise self.unsupported(
                    r.pos,
                    f"{fn}() on a picklist field",
                    "Salesforce orders picklists by their defined order, which the local org does not "
                    "model; select the values and compare them yourself.",
                )
        if fn == "COUNT_DISTINCT" and is_long_text(f):
            raise self.semantic(
                f"field {f.name} does not support aggregate operator COUNT_DISTINCT", r.pos, "INVALID_FIELD"
            )
        if fn == "COUNT":
            sql, kind, type_name, nullable = f"COUNT({r.sql})", "number", "int", False
        elif fn == "COUNT_DISTINCT":
            sql, kind, type_name, nullable = f"COUNT(DISTINCT {r.sql})", "number", "int", False
        elif fn == "AVG":
            sql, kind, type_name, nullable = f"AVG({r.sql})", "number", "double", True
        elif fn == "SUM":
            sql, kind, type_name, nullable = f"SUM({r.sql})", "number", "double", True
        else:
            sql, kind, type_name, nullable = (
                f"{fn}({r.sql})",
                kind_of(f),
                SOAP_TYPE.get(f.type, "string"),
                True,
            )
        return Operand(
            sql, kind, type_name, nullable, text, call.pos, field=f, key=(fn, *r.key), aggregate=True
        )
