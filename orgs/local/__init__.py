"""The embedded org: a bundle served as a Salesforce-compatible org on loopback.

`connect(bundle)` → a ready `simple_salesforce.Salesforce`; `LocalServer` to serve explicitly;
`LocalOrg` for in-process access to the same query engine (SOQL, SOSL, describe) without HTTP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orgs.local.engine import LocalOrg
    from orgs.local.serve import LocalServer

__all__ = ["LocalOrg", "LocalServer", "connect", "disconnect", "server_for"]


def __getattr__(name: str) -> Any:
    # keep `import orgs.local` light: FastAPI/uvicorn load only when serving
    if name == "LocalOrg":
        from orgs.local.engine import LocalOrg

        return LocalOrg
    if name in ("LocalServer", "connect", "disconnect", "server_for"):
        from orgs.local import serve

        return getattr(serve, name)
    raise AttributeError(name)
