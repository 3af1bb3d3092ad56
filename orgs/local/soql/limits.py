"""The size and depth limits of SOQL and SOSL statements, as Salesforce documents them (where it does).

- Salesforce: "Maximum length of SOQL statements: by default, 100,000 characters" and the same for SOSL;
  "4,000 characters for each string within a WHERE clause"; a SOSL search query (the text between FIND's
  braces) "longer than 10,000 characters" returns no rows, and one "longer than 4,000 characters" has its
  logical operators removed (its terms are ORed).
- Salesforce answers "long, complex" statements with QUERY_TOO_COMPLICATED without saying where the line
  is; the local org draws it at `MAX_NESTING` levels of parentheses, NOTs, function calls and subqueries,
  and at `MAX_SEARCH_NESTING` levels of operator groups in a SOSL search query (SQLite's FTS5 parser has a
  fixed stack). Flat chains (`a OR b OR c ...`) of any length are fine.
- Numbers: whole numbers up to 2^63 - 1 (SQLite's INTEGER); larger literals are compared as doubles,
  and literals beyond a double's range are refused. Dates run from 0001-01-01 to 9999-12-31 (relative
  date literals that reach past either end stop there).
"""

from __future__ import annotations

MAX_STATEMENT_CHARS = 100_000
MAX_STRING_CHARS = 4_000
MAX_SEARCH_CHARS = 10_000
SEARCH_OPERATORS_CHARS = 4_000
MAX_NESTING = 64
MAX_SEARCH_NESTING = 24
MAX_INTEGER = 2**63 - 1
MAX_NUMBER_DIGITS = 308  # a double's range: more integer digits than this is infinity
