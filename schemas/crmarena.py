"""The CRMArena task contract shared by the task builders and the checkers: task names, their block order in
`tasks.json`, reward metrics and which tasks have None answers. Facts of the benchmark's format (reference
§5.2), not of how answers are derived."""

from __future__ import annotations

import calendar

# Block order of CRMArena's released instances (reference §5.2).
TASK_ORDER: tuple[str, ...] = (
    "knowledge_qa",
    "monthly_trend_analysis",
    "top_issue_identification",
    "case_routing",
    "named_entity_disambiguation",
    "handle_time",
    "transfer_count",
    "policy_violation_identification",
    "best_region_identification",
)
FUZZY_TASKS = frozenset({"knowledge_qa"})
# Tasks where 30% of the instances answer None (reference §1: 39 of 130).
NONE_TASKS = frozenset(
    {
        "handle_time",
        "transfer_count",
        "top_issue_identification",
        "named_entity_disambiguation",
        "policy_violation_identification",
    }
)
NONE_SHARE = 0.3
MONTHS: tuple[str, ...] = tuple(calendar.month_name[1:])


def reward_metric(task: str) -> str:
    return "fuzzy_match" if task in FUZZY_TASKS else "exact_match"
