"""Environment defaults for running Prefect quietly and without a user-managed server.

Set before prefect is imported. Every value can be overridden by the caller's environment.
"""

from __future__ import annotations

import os

DEFAULTS = {
    # No telemetry, and no 'database is locked' noise from the analytics heartbeat.
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # A normal run prints nothing from Prefect; orgseed reports progress and errors itself.
    "PREFECT_LOGGING_LEVEL": "CRITICAL",
    "PREFECT_LOGGING_LOG_PRINTS": "false",
    # The temporary (ephemeral) API server can take >20 s on a cold, busy machine.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
    "PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS": str(max(2, os.cpu_count() or 2)),
    # Dask (with --runner dask): no INFO logs, no dashboard.
    "DASK_LOGGING__DISTRIBUTED": "error",
    "DASK_DISTRIBUTED__LOGGING__DISTRIBUTED": "error",
}


def configure(verbose: bool = False) -> None:
    for key, value in DEFAULTS.items():
        if verbose and key == "PREFECT_LOGGING_LEVEL":
            value = "INFO"
        os.environ.setdefault(key, value)
