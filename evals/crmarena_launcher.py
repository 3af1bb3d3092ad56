"""Run CRMArena's own `run_tasks.py` against an org orgseed serves, from a CRMArena checkout.

`orgseed crmarena` executes this file with the Python of the user's CRMArena environment; it imports
nothing of orgseed (only the standard library and the checkout). Given a JSON config (argv[1]) it:

1. puts the bundle's task instances and schema in place of `crm_sandbox.data.assets` (which would download
   them from a hub when imported), with the answer format the strategy's scorer expects (written by orgseed);
2. points CRMArena's `SalesforceConnector` at the served org (its `sf_auth` returns the instance URL and
   session id instead of reading credentials from the environment);
3. runs `run_tasks.py` as a script with the given arguments, in the checkout.

The certificate is trusted through REQUESTS_CA_BUNDLE and the model endpoint is chosen through
OPENAI_BASE_URL / OPENAI_API_BASE, both set in the environment by orgseed.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import types
from typing import Any


def main(config_path: str) -> None:
    with open(config_path, encoding="utf-8") as fh:
        cfg: dict[str, Any] = json.load(fh)
    checkout = cfg["checkout"]
    sys.path.insert(0, checkout)
    os.chdir(checkout)

    assets = types.ModuleType("crm_sandbox.data.assets")
    assets.TASKS_ORIGINAL = cfg["tasks"]  # type: ignore[attr-defined]
    assets.SCHEMA_ORIGINAL = cfg["schema"]  # type: ignore[attr-defined]
    for name in (
        "TASKS_B2B",
        "TASKS_B2B_INTERACTIVE",
        "TASKS_B2C",
        "TASKS_B2C_INTERACTIVE",
        "B2B_SCHEMA",
        "B2C_SCHEMA",
    ):
        setattr(assets, name, [])
    assets.TOOLS = None  # type: ignore[attr-defined]
    assets.EXTERNAL_FACING_TASKS = list(cfg["external_tasks"])  # type: ignore[attr-defined]
    import crm_sandbox.data as data_package

    sys.modules["crm_sandbox.data.assets"] = assets
    data_package.assets = assets

    from crm_sandbox.env import connect_sandbox

    auth = {"instance_url": cfg["instance_url"], "session_id": cfg["session_id"]}
    connect_sandbox.SalesforceConnector.sf_auth = staticmethod(lambda org_type: dict(auth))

    sys.argv = [os.path.join(checkout, "run_tasks.py"), *cfg["argv"]]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1])
