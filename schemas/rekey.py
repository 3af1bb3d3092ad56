"""Re-keying: bundle record ids replaced by the ids an org gave the same records.

A loaded org assigns its own ids; task files, ground truth and latent tables name the bundle's. `rekey`
walks any JSON value and replaces every string that is a bundle id in `ids` (also inside the text of a
string, for queries that quote an id), leaving everything else as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_ID = re.compile(r"\b[0-9A-Za-z]{15}(?:[0-9A-Za-z]{3})?\b")


def rekey(value: Any, ids: Mapping[str, str]) -> Any:
    """`value` with each bundle id (a key of `ids`) replaced by its org id."""
    if isinstance(value, str):
        if value in ids:
            return ids[value]
        if len(value) > 18:
            return _ID.sub(lambda m: ids.get(m.group(0), m.group(0)), value)
        return value
    if isinstance(value, list):
        return [rekey(v, ids) for v in value]
    if isinstance(value, tuple):
        return tuple(rekey(v, ids) for v in value)
    if isinstance(value, dict):
        return {rekey(k, ids): rekey(v, ids) for k, v in value.items()}
    return value
