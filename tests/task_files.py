"""Write a bundle's three task files for tests: sampled params, answers from `validators.task_solver`.

The files these helpers write are *well-formed* task files, used as the clean baseline that format tests
then break on purpose, and to time the checker. Their answers come from the code under test, so no test
may use them to claim an answer is right: answers are pinned by the hand-made fixtures in
`tests/fixtures/tasks/` (see `tests/task_fixtures.py`).
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from orgs.bundle import Bundle
from schemas.model import load_model
from schemas.taskspec import CRMARENA_TASKS
from validators.task_solver import MONTHS, TaskData, _read, period_delta, solve

FMT = "%Y-%m-%dT%H:%M:%SZ"
NAMED = [*MONTHS, "Q1", "Q2", "Q3", "Q4", "Spring", "Summer", "Fall", "Autumn", "Winter"]


def schema_config() -> list[dict[str, Any]]:
    """The schema config for the org model (descriptions + `References X object` on lookups)."""
    out = []
    for spec in load_model():
        fields = {}
        for f in spec.fields:
            text = f.description
            if f.is_lookup:
                text += "".join(f" References {t} object." for t in f.reference_to)
            fields[f.name] = text
        out.append({"object": spec.name, "fields": fields})
    return out


def _day(dt: datetime) -> datetime:
    return datetime(dt.year, dt.month, dt.day)


class Sampler:
    def __init__(self, data: TaskData, seed: int) -> None:
        self.data = data
        self.rng = random.Random(seed)
        created = data.cases["CreatedDate"]
        self.first = _day(created.min().to_pydatetime())
        self.last = _day(created.max().to_pydatetime())
        self.products = sorted({str(p) for p in data.cases["Product2Id"].dropna()})
        self.issues = sorted({str(i) for i in data.cases["IssueId__c"].dropna()})
        names = pd.read_csv(data.root / "data" / "Product2.csv", dtype=str)
        self.product_name = dict(zip(names["Id"], names["Name"], strict=True))
        # the orders, typed as the solver types them (TaskData keeps only what the solver reads of them)
        self.orders = _read(Bundle(data.root), "Order").set_index("Id")

    def today(self) -> datetime:
        span = (self.last - self.first).days + 60
        return self.first + timedelta(days=self.rng.randrange(30, span))

    def window(self, today: datetime, units: tuple[str, ...]) -> dict[str, Any]:
        if self.rng.random() < 0.5:
            period = self.rng.choice(units)
            count = self.rng.randint(1, 4 if period in ("quarter", "year") else 8)
            if period == "year":  # as the ground truth writes it: CRMArena's get_start_date has no 'year'
                period, count = "month", 12 * count
            return {"end_date": today.strftime(FMT), "period": period, "interval_count": count}
        year = self.rng.randint(self.first.year, self.last.year)
        return {"period_name": self.rng.choice(NAMED), "year": year}

    def params(self, task: str) -> dict[str, Any]:
        rng, data = self.rng, self.data
        if task == "knowledge_qa":
            arts = data.articles
            row = arts.iloc[rng.randrange(len(arts))]
            fact = rng.choice(json.loads(row["_facts"]))
            asks = [str(a) for a in fact.get("asks") or []]
            if asks:  # a paraphrase that needs the article's prose, as the builder asks it
                return {"article_id": str(row["Id"]), "question": rng.choice(asks)}
            question = str(fact["question"]).replace("{issue}", str(row["_subject"]).replace("_", " "))
            return {"article_id": str(row["Id"]), "question": question}
        if task == "case_routing":
            return {"issue_id": rng.choice(self.issues), "product_id": rng.choice(self.products)}
        if task == "policy_violation_identification":
            return {"case_id": str(data.cases["Id"].iloc[rng.randrange(len(data.cases))])}
        if task == "named_entity_disambiguation":
            # an order item (as its order and product), drawn from every order's products
            items = [(oid, pid) for oid, pids in data.products_of_order.items() for pid in pids]
            order_id, product_id = items[rng.randrange(len(items))]
            order = self.orders.loc[order_id]
            contacts = [c for c, a in data.contact_account.items() if a == order["AccountId"]]
            name = self.product_name[product_id]
            period, count = rng.choice(
                [("day", rng.randint(1, 20)), ("week", rng.randint(1, 3)), ("month", 1)]
            )
            today = order["EffectiveDate"].to_pydatetime() + period_delta(period, count)
            return {
                "contact_id": contacts[0] if contacts else "003Ws0000000000AAA",
                "today_date": today.strftime(FMT),
                "period": period,
                "interval_count": count,
                "ambiguous_product_name": name,
            }
        today = self.today()
        base = {"today_date": today.strftime(FMT)}
        if task in ("handle_time", "transfer_count"):
            return {
                **base,
                "extrema": rng.choice(["min", "max"]),
                "n_cases": rng.randint(0, 3),
                **self.window(today, ("day", "week", "month", "quarter")),
            }
        if task == "top_issue_identification":
            return {
                **base,
                "product_id": rng.choice(self.products),
                **self.window(today, ("month", "quarter", "year")),
            }
        if task == "monthly_trend_analysis":
            period = rng.choice(["month", "quarter"])
            count = rng.randint(7, 11) if period == "month" else rng.randint(3, 6)
            return {
                **base,
                "product_id": rng.choice(self.products),
                "end_date": today.strftime(FMT),
                "period": period,
                "interval_count": count,
            }
        if task == "best_region_identification":
            return {**base, **self.window(today, ("week", "month", "quarter"))}
        raise ValueError(task)


def _instance(idx: int, task: str, params: dict[str, Any], answer: str | None) -> dict[str, Any]:
    required = f"## {task} policy\n(test text)"
    today = params.get("today_date")
    if isinstance(today, str) and task not in (
        "case_routing",
        "policy_violation_identification",
        "knowledge_qa",
    ):
        required += f"\n## Today's date: {today[:10]}"
    query = f"Test query for {task}."
    if "product_id" in params and task != "case_routing":
        query += f" The associated product Id is {params['product_id']}."
    if "contact_id" in params:
        required += f"\n- Contact Id interacting: {params['contact_id']}"
    if "case_id" in params:
        required += f"\n- Case Id to be considered is: {params['case_id']}"
    return {
        "idx": idx,
        "task": task,
        "query": query,
        "answer": answer,
        "reward_metric": "fuzzy_match" if task == "knowledge_qa" else "exact_match",
        "metadata": {"required": required, "optional": "# Domain Details"},
    }


def write_task_files(root: Path, per_task: int, seed: int = 0, data: TaskData | None = None) -> None:
    """Sample `per_task` instances of every task (no ties, no ambiguity) and write the three files."""
    data = data or TaskData.load(root)
    sampler = Sampler(data, seed)
    tasks: list[dict[str, Any]] = []
    truth: list[dict[str, Any]] = []
    for task in CRMARENA_TASKS:
        made = 0
        for _ in range(per_task * 50):
            if made == per_task:
                break
            params = sampler.params(task)
            sol = solve(data, task, params)
            if sol.outcome != "answer":
                continue
            idx = len(tasks)
            tasks.append(_instance(idx, task, params, sol.answer))
            candidates = dict(sol.candidates) if isinstance(sol.candidates, dict) else sol.candidates
            truth.append(
                {
                    "idx": idx,
                    "task": task,
                    "params": params,
                    "answer": sol.answer,
                    "candidates": candidates,
                    "margin": sol.margin,
                }
            )
            made += 1
        if made < per_task:
            raise RuntimeError(f"could not sample {per_task} {task} instances")
    out = root / "tasks"
    out.mkdir(exist_ok=True)
    (out / "tasks.json").write_text(json.dumps(tasks, indent=1), encoding="utf-8")
    (out / "schema.json").write_text(json.dumps(schema_config(), indent=1), encoding="utf-8")
    (out / "ground_truth.jsonl").write_text("".join(json.dumps(r) + "\n" for r in truth), encoding="utf-8")
