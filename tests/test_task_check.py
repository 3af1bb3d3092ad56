"""check_tasks on well-formed task files and on files broken on purpose (one break per test)."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from schemas.taskspec import CRMARENA_TASKS
from tests.task_files import write_task_files
from validators.tasks import Disagreement, check_tasks, check_tasks_report

PER_TASK = 10
BLOCK = {task: i * PER_TASK for i, task in enumerate(CRMARENA_TASKS)}


@pytest.fixture(scope="module")
def clean_bundle(small_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("task-check") / "bundle"
    shutil.copytree(small_bundle, root)
    write_task_files(root, PER_TASK, seed=3)
    return root


@pytest.fixture
def bundle(clean_bundle: Path, tmp_path: Path) -> Path:
    """A private copy of the clean bundle, to break."""
    return Path(shutil.copytree(clean_bundle, tmp_path / "bundle"))


def _tasks(root: Path) -> list[dict[str, Any]]:
    return list(json.loads((root / "tasks" / "tasks.json").read_text(encoding="utf-8")))


def _gt(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / "tasks" / "ground_truth.jsonl").read_text().splitlines()]


def _write(
    root: Path, tasks: list[dict[str, Any]] | None = None, gt: list[dict[str, Any]] | None = None
) -> None:
    if tasks is not None:
        (root / "tasks" / "tasks.json").write_text(json.dumps(tasks), encoding="utf-8")
    if gt is not None:
        (root / "tasks" / "ground_truth.jsonl").write_text("".join(json.dumps(r) + "\n" for r in gt))


def _edit(root: Path, idx: int, change: Callable[[dict[str, Any], dict[str, Any]], None]) -> None:
    tasks, gt = _tasks(root), _gt(root)
    change(tasks[idx], gt[idx])
    _write(root, tasks, gt)


def _kinds(found: list[Disagreement]) -> list[tuple[int | None, str, str | None]]:
    return sorted(((d.idx, d.kind, d.file) for d in found), key=str)


def _first(root: Path, task: str, want: Callable[[dict[str, Any]], bool]) -> int:
    for row in _gt(root):
        if row["task"] == task and want(row):
            return int(row["idx"])
    raise AssertionError(f"no {task} instance fits")


def test_clean_files_have_no_disagreements(clean_bundle: Path) -> None:
    report = check_tasks_report(clean_bundle)
    assert report.instances == PER_TASK * len(CRMARENA_TASKS)
    assert report.disagreements == []


def test_list_answer_format_is_accepted(bundle: Path) -> None:
    tasks, gt = _tasks(bundle), _gt(bundle)
    for doc in tasks:
        doc["answer"] = [doc["answer"]]
    for row in gt:
        row["answer"] = [row["answer"]]
    _write(bundle, tasks, gt)
    assert check_tasks(bundle) == []


def test_missing_files(bundle: Path) -> None:
    (bundle / "tasks" / "schema.json").unlink()
    (bundle / "tasks" / "ground_truth.jsonl").unlink()
    found = check_tasks(bundle)
    assert sorted((d.kind, d.expected) for d in found) == [
        ("missing", "ground_truth.jsonl"),
        ("missing", "schema.json"),
    ]


def test_wrong_id_prefix_in_answer(bundle: Path) -> None:
    idx = _first(bundle, "handle_time", lambda r: r["answer"] is not None)
    product = _gt(bundle)[BLOCK["top_issue_identification"]]["params"]["product_id"]

    def change(t: dict[str, Any], g: dict[str, Any]) -> None:
        t["answer"] = g["answer"] = product

    _edit(bundle, idx, change)
    found = check_tasks(bundle)
    fmt = [d for d in found if d.kind == "format"]
    assert {(d.idx, d.file) for d in fmt} >= {(idx, "tasks.json"), (idx, "ground_truth.jsonl")}
    assert any("key prefix `01t`, expected `005`" in d.message for d in fmt)
    assert {d.idx for d in found} == {idx}


def test_wrong_checksum_in_param(bundle: Path) -> None:
    idx = BLOCK["policy_violation_identification"]

    def change(t: dict[str, Any], g: dict[str, Any]) -> None:
        case = g["params"]["case_id"]
        g["params"]["case_id"] = case[:15] + ("AAA" if case[15:] != "AAA" else "AAB")

    _edit(bundle, idx, change)
    found = check_tasks(bundle)
    assert any(d.kind == "format" and "case-safe suffix" in d.message for d in found)
    assert {d.idx for d in found} == {idx}


def test_gap_in_idx(bundle: Path) -> None:
    tasks, gt = _tasks(bundle), _gt(bundle)
    gap = BLOCK["case_routing"] + 3
    del tasks[gap]
    del gt[gap]
    _write(bundle, tasks, gt)
    found = check_tasks(bundle)
    messages = [d.message for d in found if d.kind == "format"]
    assert any(f"idx {gap} is missing" in m for m in messages)
    assert any("expected N per task" in m for m in messages)
    # instances after the gap no longer sit at the position equal to their idx
    assert any(d.idx == gap + 1 and "position" in d.message for d in found)


def test_block_order(bundle: Path) -> None:
    tasks, gt = _tasks(bundle), _gt(bundle)
    a, b = BLOCK["handle_time"], BLOCK["transfer_count"]
    for docs in (tasks, gt):
        docs[a]["task"], docs[b]["task"] = docs[b]["task"], docs[a]["task"]
        docs[a]["answer"], docs[b]["answer"] = docs[b]["answer"], docs[a]["answer"]
        key = "params" if "params" in docs[a] else "query"
        docs[a][key], docs[b][key] = docs[b][key], docs[a][key]
    _write(bundle, tasks, gt)
    found = check_tasks(bundle)
    order = [d for d in found if "belong to" in d.message]
    assert {(d.idx, d.task, d.expected) for d in order} == {
        (a, "transfer_count", "handle_time"),
        (b, "handle_time", "transfer_count"),
    }


def test_wrong_metric(bundle: Path) -> None:
    def change(t: dict[str, Any], g: dict[str, Any]) -> None:
        t["reward_metric"] = "exact_match"

    _edit(bundle, 0, change)
    found = check_tasks(bundle)
    assert _kinds(found) == [(0, "format", "tasks.json")]
    assert "/0/reward_metric" in found[0].message and "fuzzy_match" in found[0].message


def test_answer_not_in_article(bundle: Path) -> None:
    article = _gt(bundle)[0]["params"]["article_id"]
    path = bundle / "data" / "Knowledge__kav.csv"
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        if row["Id"] == article:
            row["FAQ_Answer__c"] = "Nothing to see here."
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    found = check_tasks(bundle)
    affected = {r["idx"] for r in _gt(bundle) if r["params"].get("article_id") == article}
    assert {d.idx for d in found} == affected
    assert all(d.kind == "format" and "does not appear in the FAQ_Answer__c" in d.message for d in found)


def test_files_disagree(bundle: Path) -> None:
    idx = _first(bundle, "best_region_identification", lambda r: r["answer"] != "ZZ")

    def change(t: dict[str, Any], g: dict[str, Any]) -> None:
        t["answer"] = "ZZ"

    _edit(bundle, idx, change)
    found = check_tasks(bundle)
    assert _kinds(found) == [(idx, "answer_mismatch", "tasks.json"), (idx, "answer_mismatch", "tasks.json")]
    assert any("ground_truth.jsonl" in d.message and "tasks.json answers" in d.message for d in found)


def test_wrong_answer_in_both_files(bundle: Path) -> None:
    idx = _first(bundle, "case_routing", lambda r: True)
    original = _gt(bundle)[idx]["answer"]
    other = next(
        r["answer"] for r in _gt(bundle) if r["task"] == "handle_time" and r["answer"] not in (None, original)
    )

    def change(t: dict[str, Any], g: dict[str, Any]) -> None:
        t["answer"] = g["answer"] = other

    _edit(bundle, idx, change)
    found = check_tasks(bundle)
    assert _kinds(found) == [
        (idx, "answer_mismatch", "ground_truth.jsonl"),
        (idx, "answer_mismatch", "tasks.json"),
    ]
    assert all(d.expected == original and d.found == other for d in found)


def test_missing_ground_truth_line(bundle: Path) -> None:
    gt = _gt(bundle)
    idx = BLOCK["monthly_trend_analysis"] + 1
    gt = [r for r in gt if r["idx"] != idx]
    _write(bundle, gt=gt)
    found = check_tasks(bundle)
    assert (idx, "missing", "ground_truth.jsonl") in _kinds(found)


def test_today_date_missing_from_required(bundle: Path) -> None:
    idx = BLOCK["transfer_count"]

    def change(t: dict[str, Any], g: dict[str, Any]) -> None:
        t["metadata"]["required"] = t["metadata"]["required"].replace("Today's date", "Date")
        t["metadata"]["required"] = t["metadata"]["required"].replace(
            g["params"]["today_date"][:10], "(unknown)"
        )

    _edit(bundle, idx, change)
    found = check_tasks(bundle)
    assert _kinds(found) == [(idx, "format", "tasks.json")]
    assert "today's date" in found[0].message


def test_contact_id_must_be_told(bundle: Path) -> None:
    idx = BLOCK["named_entity_disambiguation"]

    def change(t: dict[str, Any], g: dict[str, Any]) -> None:
        t["metadata"]["required"] = t["metadata"]["required"].replace(g["params"]["contact_id"], "someone")

    _edit(bundle, idx, change)
    found = check_tasks(bundle)
    assert _kinds(found) == [(idx, "format", "tasks.json")]
    assert "params.contact_id" in found[0].message


def test_mixed_window_params(bundle: Path) -> None:
    idx = _first(bundle, "best_region_identification", lambda r: "end_date" in r["params"])

    def change(t: dict[str, Any], g: dict[str, Any]) -> None:
        g["params"]["period_name"] = "Winter"
        g["params"]["year"] = 2021

    _edit(bundle, idx, change)
    found = check_tasks(bundle)
    assert {d.idx for d in found} == {idx}
    assert any(d.kind == "format" and "never both" in d.message for d in found)


def test_end_date_must_be_today(bundle: Path) -> None:
    idx = BLOCK["monthly_trend_analysis"]

    def change(t: dict[str, Any], g: dict[str, Any]) -> None:
        g["params"]["end_date"] = "1999-01-01T00:00:00Z"

    _edit(bundle, idx, change)
    found = check_tasks(bundle)
    assert any(
        d.idx == idx and d.kind == "format" and "end_date should be today_date" in d.message for d in found
    )


def test_bad_json_line(bundle: Path) -> None:
    path = bundle / "tasks" / "ground_truth.jsonl"
    lines = path.read_text().splitlines()
    lines[4] = lines[4][:-1]
    path.write_text("\n".join(lines) + "\n")
    found = check_tasks(bundle)
    assert any(d.kind == "format" and "ground_truth.jsonl:5:" in d.message for d in found)
    assert (4, "missing", "ground_truth.jsonl") in _kinds(found)


def test_candidates_and_margin(bundle: Path) -> None:
    idx = _first(bundle, "top_issue_identification", lambda r: r["answer"] is not None)

    def change(t: dict[str, Any], g: dict[str, Any]) -> None:
        key = next(iter(g["candidates"]))
        g["candidates"][key] += 5
        g["margin"] = 0

    _edit(bundle, idx, change)
    found = check_tasks(bundle)
    assert _kinds(found) == [
        (idx, "candidates_mismatch", "ground_truth.jsonl"),
        (idx, "margin_mismatch", "ground_truth.jsonl"),
    ]


def test_schema_config(bundle: Path) -> None:
    path = bundle / "tasks" / "schema.json"
    config = json.loads(path.read_text())
    case = next(e for e in config if e["object"] == "Case")
    case["fields"]["OwnerId"] = "The agent who owns the case."
    case["fields"]["NoSuchField__c"] = "Not a field."
    config[0], config[1] = config[1], config[0]
    path.write_text(json.dumps(config))
    found = check_tasks(bundle)
    messages = [d.message for d in found]
    assert all(d.kind == "format" and d.file == "schema.json" for d in found)
    assert any("Case.OwnerId must say `References User object`" in m for m in messages)
    assert any("Case.NoSuchField__c is not a field" in m for m in messages)
    assert any(m.startswith("schema.json/0/object") for m in messages)


def test_malformed_documents_are_reported_not_raised(bundle: Path) -> None:
    tasks_dir = bundle / "tasks"
    (tasks_dir / "tasks.json").write_text('[1, {"idx": "x"}]')
    (tasks_dir / "schema.json").write_text('{"a": 1}')
    (tasks_dir / "ground_truth.jsonl").write_text(
        '"x"\n{"idx": 1, "task": "handle_time", "params": {"extrema": "mid", "n_cases": 0, '
        '"today_date": "2020-01-01T00:00:00Z", "period_name": "Winter", "year": "2021"}}\n'
    )
    found = check_tasks(bundle)
    messages = [d.message for d in found]
    assert all(d.kind in ("format", "missing", "answer_mismatch") for d in found)
    assert "tasks.json/0: 1 is not of type 'object'. Fix the builder that writes this instance." in messages
    assert any(m.startswith("schema.json: {'a': 1} is not of type 'array'") for m in messages)
    assert any(m.startswith("ground_truth.jsonl line 1: 'x' is not of type 'object'") for m in messages)
    assert any("line 2 at /params/extrema: 'mid' is not one of" in m for m in messages)
    assert any("params.year must be an integer" in m for m in messages)


def test_a_query_doubling_a_determiner_or_stating_a_zero_price(bundle: Path) -> None:
    """Issue 16: no article/determiner doubling and no "$0.00" purchase anywhere, task queries included."""
    idx = _first(bundle, "case_routing", lambda row: True)

    def change(t: dict[str, Any], g: dict[str, Any]) -> None:
        t["query"] = "Who should take the case about my the jacket I paid $0.00 for?"

    _edit(bundle, idx, change)
    found = check_tasks(bundle)
    assert _kinds(found) == [(idx, "format", "tasks.json")] * 2
    assert sorted(str(d.found) for d in found) == ["$0.00", "my the"]


def test_the_check_keeps_only_the_messages_of_the_cases_the_instances_name(clean_bundle: Path) -> None:
    """The code check reads the emails and chats of the cases its questions name, not the whole objects; for
    those cases it sees exactly what a full load sees, and asking for any other case is an error."""
    from validators.task_solver import TaskData
    from validators.tasks import message_cases

    gt = _gt(clean_bundle)
    named = message_cases(gt)
    policy = {str(r["params"]["case_id"]) for r in gt if r["task"] == "policy_violation_identification"}
    assert policy and policy <= named
    full = TaskData.load(clean_bundle)
    kept = TaskData.load(clean_bundle, named)
    with_messages = set(full.emails["ParentId"].dropna()) | set(full.chats["CaseId"].dropna())
    assert named & with_messages, (
        "the fixture names no case with messages: the comparison would prove nothing"
    )
    for case in sorted(named):
        for a, b in (
            (full.emails_of(case), kept.emails_of(case)),
            (full.chats_of(case), kept.chats_of(case)),
        ):
            pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))
    assert len(kept.emails) == sum(len(full.emails_of(c)) for c in named) < len(full.emails)
    other = next(c for c in sorted(with_messages) if c not in named)
    with pytest.raises(KeyError, match=f"case {other}"):
        kept.emails_of(other)


def test_the_check_indexes_only_the_orders_its_questions_ask_about(clean_bundle: Path) -> None:
    """The code check indexes the orders of the accounts its named-entity questions name and of the cases its
    policy questions name, not every order: every instance is answered exactly as with every order indexed,
    and asking about another account's orders or another case's order is an error."""
    from validators.task_solver import TaskData, solve
    from validators.tasks import message_cases, order_contacts

    gt = _gt(clean_bundle)
    contacts, cases = order_contacts(gt), message_cases(gt)
    ned = [r for r in gt if r["task"] == "named_entity_disambiguation"]
    pvi = [r for r in gt if r["task"] == "policy_violation_identification"]
    assert ned and pvi and {str(r["params"]["contact_id"]) for r in ned} == contacts
    full = TaskData.load(clean_bundle)
    kept = TaskData.load(clean_bundle, cases, contacts)
    for row in gt:
        assert solve(kept, row["task"], row["params"]) == solve(full, row["task"], row["params"]), row["idx"]
    # some question is answered from an order the scoped load indexed (the comparison proves something)
    assert any(solve(full, r["task"], r["params"]).answer is not None for r in ned)
    assert any(solve(full, r["task"], r["params"]).details.get("order_date") for r in pvi)
    # a fraction of the orders: those of the accounts asked about and of the named cases' items
    asked = {str(full.contact_account.get(c)) for c in contacts}
    assert set(kept.activated_orders_on) == {k for k in full.activated_orders_on if k[0] in asked}
    asked_orders = {o for (a, _), orders in full.activated_orders_on.items() if a in asked for o in orders}
    named_items = set(full.cases.loc[full.cases["Id"].isin(cases), "OrderItemId__c"].dropna())
    case_orders = {o for i, o in full.item_order.items() if i in named_items}
    # (the dates of the asked accounts' other orders come with them: the same as a full load's)
    assert kept.order_date.items() <= full.order_date.items()
    assert (asked_orders | case_orders) & set(full.order_date) <= set(kept.order_date)
    assert kept.products_of_order == {o: p for o, p in full.products_of_order.items() if o in asked_orders}
    assert len(kept.order_date) < len(full.order_date) and len(kept.item_order) < len(full.item_order)
    other = next(a for a, _ in full.activated_orders_on if a not in asked)
    contact = next(c for c, a in full.contact_account.items() if a == other)
    with pytest.raises(KeyError, match=f"account {other}"):
        solve(kept, "named_entity_disambiguation", {**ned[0]["params"], "contact_id": contact})
    case = next(c for c in full.item_order if c not in kept.item_order)
    case_id = str(full.cases.loc[full.cases["OrderItemId__c"] == case, "Id"].iloc[0])
    with pytest.raises(KeyError, match=f"case {case_id}"):
        solve(kept, "policy_violation_identification", {**pvi[0]["params"], "case_id": case_id})


def test_the_messages_are_kept_across_batches(clean_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read a few rows at a time, the kept messages are the same rows in the same order."""
    from validators import task_solver

    named = {
        str(c) for c in task_solver.TaskData.load(clean_bundle).emails["ParentId"].dropna().unique()[:25]
    }
    whole = task_solver.TaskData.load(clean_bundle, named)
    monkeypatch.setattr(task_solver, "READ_BATCH", 7)
    batched = task_solver.TaskData.load(clean_bundle, named)
    pd.testing.assert_frame_equal(whole.emails, batched.emails)
    pd.testing.assert_frame_equal(whole.chats, batched.chats)
    assert len(whole.emails) > 7
    # every object is read and typed a batch at a time: the same frames as in one batch
    for attr in ("cases", "assignments"):
        pd.testing.assert_frame_equal(getattr(whole, attr), getattr(batched, attr), check_exact=True)
    # the order items and the orders, read a batch at a time and not kept: what is kept of them is the same
    assert whole.products_of_order == batched.products_of_order and whole.item_order == batched.item_order
    assert whole.order_date == batched.order_date
    assert whole.activated_orders_on == batched.activated_orders_on
    assert sum(map(len, whole.products_of_order.values())) > 7 and len(whole.item_order) > 7
    # the owner assignments, kept batch by batch: the whole history's Owner Assignment rows, by date then Id
    from orgs.bundle import Bundle, type_frame
    from schemas.model import load_model

    history = Bundle(clean_bundle).read_columns("CaseHistory__c", list(task_solver.COLUMNS["CaseHistory__c"]))
    history = type_frame(load_model().get("CaseHistory__c"), history)
    expected = history[history["Field__c"] == "Owner Assignment"].sort_values(["CreatedDate", "Id"])
    assert 7 < len(expected) < len(history)
    pd.testing.assert_frame_equal(batched.assignments, expected.reset_index(drop=True), check_exact=True)


def test_what_is_kept_of_the_order_items_is_read_from_every_item(clean_bundle: Path) -> None:
    """The order items are not kept: each case's item's order and product, and every order's products, are, as
    the whole OrderItem file (read here with the csv module) gives them."""
    import csv

    from validators import task_solver

    data = task_solver.TaskData.load(clean_bundle)
    with (clean_bundle / "data" / "OrderItem.csv").open(newline="", encoding="utf-8") as fh:
        items = list(csv.DictReader(fh))
    with (clean_bundle / "data" / "Case.csv").open(newline="", encoding="utf-8") as fh:
        case_items = {row["OrderItemId__c"] for row in csv.DictReader(fh) if row["OrderItemId__c"]}
    assert len(case_items) > 10 and len(items) > 2 * len(case_items)  # most items belong to no case
    want: dict[str, list[str]] = {}
    for row in items:
        want.setdefault(row["OrderId"], []).append(row["Product2Id"])
    assert data.products_of_order == want
    assert data.item_order == {r["Id"]: r["OrderId"] for r in items if r["Id"] in case_items}
    product = {r["Id"]: r["Product2Id"] for r in items}
    cases = data.cases.dropna(subset=["OrderItemId__c"])
    assert cases["Product2Id"].tolist() == [product[i] for i in cases["OrderItemId__c"]]


def test_what_is_kept_of_the_orders_is_read_from_every_order(clean_bundle: Path) -> None:
    """The orders are not kept: each order's day, and the orders each account activated on a day (in file
    order), are, as the whole Order file (read here with the csv module) gives them."""
    import csv
    from datetime import date

    from validators import task_solver

    data = task_solver.TaskData.load(clean_bundle)
    with (clean_bundle / "data" / "Order.csv").open(newline="", encoding="utf-8") as fh:
        orders = list(csv.DictReader(fh))
    days = {r["Id"]: date.fromisoformat(r["EffectiveDate"][:10]) for r in orders if r["EffectiveDate"]}
    activated: dict[tuple[str, date], list[str]] = {}
    for r in orders:
        if r["Status"] == "Activated" and r["AccountId"] and r["EffectiveDate"]:
            activated.setdefault((r["AccountId"], days[r["Id"]]), []).append(r["Id"])
    assert len(days) > 10 and 0 < sum(map(len, activated.values())) < len(days)  # some orders are drafts
    assert data.order_date == days
    assert data.activated_orders_on == activated
    assert not hasattr(data, "orders")
