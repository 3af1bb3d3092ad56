"""The error corpus: malformed or unsupported queries fail like Salesforce, located exactly.

Each query goes through simple-salesforce; the client must raise the exception a real org's answer
raises (SalesforceMalformedRequest for 400), and the body must be the Salesforce error list with the
expected errorCode and an `ERROR at Row:R:Column:C` message pointing at the expected place.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from simple_salesforce.exceptions import SalesforceError, SalesforceMalformedRequest

from tests.orgs.local.conftest import FIXTURES

CORPUS = [
    json.loads(line)
    for line in (FIXTURES / "errors.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
]
LOCATION = re.compile(
    r"^\n(?P<line>.*)\n(?P<pad>[ \t]*)\^\nERROR at Row:(?P<row>\d+):Column:(?P<col>\d+)\n", re.DOTALL
)


def expected_position(entry: dict[str, Any]) -> tuple[int, int]:
    text = entry["q"]
    if entry["at"] == "<EOF>":
        offset = len(text)
    else:
        offset = -1
        for _ in range(entry["nth"] + 1):
            offset = text.index(entry["at"], offset + 1)
    row = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return row, col


def test_corpus_size() -> None:
    assert len(CORPUS) >= 60
    assert sum(e["kind"] == "search" for e in CORPUS) >= 15


@pytest.mark.parametrize("entry", CORPUS, ids=[f"{i:03d}-{e['code']}" for i, e in enumerate(CORPUS)])
def test_error(entry: dict[str, Any], sf: Any) -> None:
    with pytest.raises(SalesforceError) as caught:
        if entry["kind"] == "search":
            sf.search(entry["q"])
        else:
            sf.query(entry["q"])
    exc = caught.value
    assert exc.status == entry["status"]
    if entry["status"] == 400:
        assert isinstance(exc, SalesforceMalformedRequest)
    content: object = exc.content  # the parsed JSON body, though simple-salesforce annotates it as bytes
    assert isinstance(content, list) and len(content) == 1
    body = content[0]
    assert set(body) == {"message", "errorCode"}
    assert body["errorCode"] == entry["code"], body["message"]
    m = LOCATION.match(body["message"])
    assert m, f"no caret location in {body['message']!r}"
    row, col = expected_position(entry)
    assert (int(m.group("row")), int(m.group("col"))) == (row, col), body["message"]
    assert entry["contains"] in body["message"]
    # the caret sits under the reported column of the echoed line
    line = entry["q"].split("\n")[row - 1]
    if len(line) <= 120:
        assert m.group("line") == line
        assert len(m.group("pad")) == col - 1
