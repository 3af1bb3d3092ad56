"""A whole evaluation: settings, the org connection, concurrent episodes, resumable results, the leaderboard
and the dry-run estimate.

Output, under the bundle (`reports/eval/<run>/`): `run.json` (the settings), `results.jsonl` (one line per
instance, appended as each finishes, rewritten in idx order at the end), `leaderboard.md` and
`leaderboard.json` (this run's row). `reports/eval/leaderboard.{md,json}` gathers the rows of every run of
the bundle, baselines included. A rerun of the same run skips finished instances; instances that failed for
reasons outside the agent (the endpoint or the org unreachable) are run again.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evals import prompts
from evals.agents import (
    Agent,
    MajorityAgent,
    ModelSettings,
    ModelUnavailable,
    NoneAgent,
    OpenAIAgent,
    OracleAgent,
    RandomAgent,
    Reply,
    cache_key,
    request_body,
)
from evals.frameworks import FRAMEWORKS, Outcome, run_episode, tool_schemas
from evals.leaderboard import board_row, markdown, task_scores
from evals.reward import Parser, Score, extract_answers, score_chat, score_function_calling
from evals.tasks import BundleTasks, Instance, external_tasks, resolve_tasks
from orgs.crmarena_tools import Connector, OrgUnreachable
from schemas.errors import UsageError

AGENTS = ("model", "oracle", "none", "majority", "random")
BASELINES = AGENTS[1:]
RESULTS = "results.jsonl"


@dataclass(frozen=True)
class EvalSettings:
    bundle: str
    agent: str = "model"  # a model, or one of the no-LLM baselines
    model: str | None = None
    base_url: str | None = None
    framework: str = "function-calling"
    tasks: tuple[str, ...] = ()  # task names or abbreviations; empty: all nine
    per_task: int | None = None
    concurrency: int = 4
    max_turns: int = 20
    raw_queries: bool = True  # function calling: add issue_soql_query / issue_sosl_query (and the schema)
    aided: bool = False  # add metadata.optional to the system prompt (CRMArena's `aided` mode)
    run: str | None = None
    cache: str | None = None
    no_cache: bool = False
    judge: str | None = None  # a model that parses ReAct/Act answers, as CRMArena's Evaluator does (off)
    instance_url: str | None = None  # a served or seeded org; default: the bundle served in-process
    session_id: str | None = None
    seed: int = 0
    max_tokens: int = 2000
    retries: int = 6  # the openai client's retries of 429s, 5xx and timeouts (it honours Retry-After)

    @property
    def label(self) -> str:
        return str(self.model) if self.agent == "model" else f"{self.agent} (baseline)"

    @property
    def run_name(self) -> str:
        if self.run:
            return self.run
        who = self.model if self.agent == "model" else self.agent
        return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{who}-{self.framework}")

    @property
    def run_dir(self) -> Path:
        return Path(self.bundle) / "reports" / "eval" / self.run_name

    def identity(self) -> dict[str, Any]:
        """What makes two runs comparable (a rerun must match it to resume)."""
        return {
            "agent": self.agent,
            "model": self.model,
            "base_url": self.base_url,
            "framework": self.framework,
            "raw_queries": self.raw_queries,
            "aided": self.aided,
            "max_turns": self.max_turns,
            "judge": self.judge,
            "seed": self.seed if self.agent == "random" else None,
            "max_tokens": self.max_tokens,
        }


def check_settings(s: EvalSettings) -> None:
    if s.framework not in FRAMEWORKS:
        raise UsageError(f"--framework must be one of {', '.join(FRAMEWORKS)} (got {s.framework!r}).")
    if s.agent not in AGENTS:
        raise UsageError(f"--agent must be one of {', '.join(BASELINES)} (got {s.agent!r}).")
    if s.agent == "model" and not s.model:
        raise UsageError("Give --model M (a model of the endpoint), or --agent oracle|none|majority|random.")
    if s.concurrency < 1 or s.max_turns < 1:
        raise UsageError("--concurrency and --max-turns must be at least 1.")
    if s.per_task is not None and s.per_task < 0:
        raise UsageError("--per-task must be 0 or more.")
    if bool(s.instance_url) != bool(s.session_id):
        raise UsageError("--instance-url and --session-id go together.")
    if s.run is not None and not re.fullmatch(r"[A-Za-z0-9._-]+", s.run):
        raise UsageError(f"--run {s.run!r}: use letters, digits, '.', '_' and '-' only.")
    if s.tasks:
        resolve_tasks(list(s.tasks))
    if not (Path(s.bundle) / "manifest.json").is_file():
        raise UsageError(f"{s.bundle} is not a bundle (no manifest.json); build one with `orgseed build`.")


# -- the org ------------------------------------------------------------------------------------------------------


class OrgClients:
    """One simple-salesforce client per worker thread: the bundle served in-process over loopback HTTPS, or
    the org at --instance-url."""

    def __init__(self, s: EvalSettings) -> None:
        self.s = s
        self._local = threading.local()
        self._server: Any = None
        if not s.instance_url:
            from orgs.local import server_for

            self._server = server_for(s.bundle)

    def client(self) -> Any:
        sf = getattr(self._local, "sf", None)
        if sf is None:
            if self._server is not None:
                sf = self._server.client()
            else:
                # the project's one way into a live org: the API version the rest of orgseed speaks, the
                # session checked with one call before any instance runs on it, and a refused or unreachable
                # org reported as an OrgConnectError that names the URL and never the token
                from orgs.salesforce.connect import OrgOptions, connect

                sf = connect(OrgOptions(instance_url=self.s.instance_url, access_token=self.s.session_id))
            self._local.sf = sf
        return sf


# -- agents -------------------------------------------------------------------------------------------------------


def make_agent(s: EvalSettings, tasks: BundleTasks) -> Agent:
    if s.agent == "oracle":
        return OracleAgent()
    if s.agent == "none":
        return NoneAgent()
    if s.agent == "majority":
        return MajorityAgent(tasks.instances)
    if s.agent == "random":
        return RandomAgent(tasks.instances, s.seed)
    return OpenAIAgent(_model_settings(s, str(s.model)), *_key_cache_price(s, str(s.model)))


def _model_settings(s: EvalSettings, model: str) -> ModelSettings:
    return ModelSettings(model=model, base_url=s.base_url, max_tokens=s.max_tokens, max_retries=s.retries)


def _key_cache_price(s: EvalSettings, model: str) -> tuple[str | None, Any, dict[str, float] | None]:
    from generator.text.cache import ResponseCache, default_cache_path
    from generator.text.llm import resolve_api_key
    from generator.text.usage import load_prices, price_for

    cache = (
        None if s.no_cache else ResponseCache(Path(s.cache).expanduser() if s.cache else default_cache_path())
    )
    prices, _ = load_prices()
    found = price_for(model, prices)
    return resolve_api_key(), cache, (dict(found[1]) if found else None)


JUDGE_PROMPT = """\
You read the final answer of an AI agent and extract the {kind} it gives.
- Extract only {what}. If several are given, extract all of them. If none is given, extract "None".
- Reply with JSON only: {{"extracted_answers": [...]}}."""


def make_judge(s: EvalSettings) -> Parser | None:
    """CRMArena's LLM answer parser for ReAct/Act, when --judge names a model; None otherwise."""
    if not s.judge:
        return None
    judge = OpenAIAgent(_model_settings(s, s.judge), *_key_cache_price(s, s.judge))
    kinds = {
        "monthly_trend_analysis": ("months", "month names such as May or June"),
        "best_region_identification": ("US states", "states as two-letter codes such as NY or CA"),
    }

    def parse(text: str, task: str) -> list[str]:
        kind, what = kinds.get(task, ("IDs", "record Ids such as 005Ws000001xYl3IAE"))
        reply = judge.reply(
            [
                {"role": "system", "content": JUDGE_PROMPT.format(kind=kind, what=what)},
                {"role": "user", "content": text},
            ],
            None,
        )
        try:
            found = json.loads(reply.content or "")["extracted_answers"]
            if isinstance(found, list) and found:
                return ["None" if f is None else str(f) for f in found]
        except (ValueError, KeyError, TypeError):
            pass
        return extract_answers(text, task)

    return parse


# -- one instance -------------------------------------------------------------------------------------------------


def system_for(s: EvalSettings, tasks: BundleTasks, inst: Instance) -> str:
    return prompts.system_prompt(
        s.framework,
        tasks.schema,
        inst.required,
        inst.optional if s.aided else "",
        raw_queries=s.raw_queries,
        external=inst.task in external_tasks(),
    )


def score(s: EvalSettings, inst: Instance, out: Outcome, judge: Parser | None) -> Score:
    if not out.responded:
        return Score(0.0, [], False, 0.0 if inst.reward_metric == "fuzzy_match" else None)
    if s.framework == "function-calling":
        return score_function_calling(out.answer, inst.answer, inst.reward_metric)
    return score_chat(str(out.answer), inst.answer, inst.reward_metric, inst.task, judge)


def result_row(s: EvalSettings, inst: Instance, out: Outcome, sc: Score) -> dict[str, Any]:
    return {
        "idx": inst.idx,
        "task": inst.task,
        "status": "done",
        "answer": out.answer,
        "parsed_answer": sc.parsed,
        "ground_truth": list(inst.answer),
        "reward": sc.reward,
        "metrics": {"em": sc.em, **({"f1": sc.f1} if sc.f1 is not None else {})},
        "end_reason": out.end_reason,
        "turns": out.turns,
        "tool_calls": out.actions,
        "invalid_actions": out.invalid_actions,
        "tool_errors": out.tool_errors,
        "tokens": {"prompt": out.prompt_tokens, "completion": out.completion_tokens},
        "requests": out.requests,
        "cache_hits": out.cache_hits,
        "cost_usd": None if out.cost is None else round(out.cost, 6),
        "latency_s": round(out.seconds, 3),
        "model_s": round(out.model_seconds, 3),
        "trajectory": out.messages,
    }


def error_row(inst: Instance, exc: BaseException, seconds: float) -> dict[str, Any]:
    return {
        "idx": inst.idx,
        "task": inst.task,
        "status": "error",
        "error": f"{type(exc).__name__}: {exc}",
        "reward": 0.0,
        "latency_s": round(seconds, 3),
    }


# -- the run --------------------------------------------------------------------------------------------------------


@dataclass
class EvalReport:
    run_dir: Path
    rows: list[dict[str, Any]]
    board: dict[str, Any]
    ran: int  # instances run now
    skipped: int  # finished in an earlier run
    errors: int
    seconds: float
    totals: dict[str, Any] = field(default_factory=dict)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_results(path: Path) -> dict[int, dict[str, Any]]:
    """The last line per idx of a results file (a torn last line from a crash is ignored)."""
    out: dict[int, dict[str, Any]] = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            out[int(row["idx"])] = row
        except (ValueError, KeyError, TypeError):
            continue
    return out


def _prepare_run_dir(s: EvalSettings) -> Path:
    run_dir = s.run_dir
    settings_path = run_dir / "run.json"
    if settings_path.is_file():
        try:
            before = json.loads(settings_path.read_text(encoding="utf-8")).get("identity")
        except ValueError:
            before = None
        if before != s.identity():
            raise UsageError(
                f"{run_dir} holds a run with other settings ({before}); resume it with the same settings, or "
                "start another with --run NAME.",
                path=str(run_dir),
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    _atomic_write(
        settings_path, json.dumps({"identity": s.identity(), "settings": asdict(s)}, indent=2) + "\n"
    )
    return run_dir


def run_eval(s: EvalSettings, on_result: Callable[[dict[str, Any]], None] | None = None) -> EvalReport:
    """Run (or resume) an evaluation and write its results and leaderboard."""
    check_settings(s)
    started = time.perf_counter()
    tasks = BundleTasks(s.bundle)
    selected = tasks.select(list(s.tasks) or None, s.per_task)
    run_dir = _prepare_run_dir(s)
    results_path = run_dir / RESULTS
    previous = read_results(results_path)
    wanted = {i.idx for i in selected}
    done = {k: v for k, v in previous.items() if v.get("status") == "done" and k in wanted}
    pending = [i for i in selected if i.idx not in done]
    agent = make_agent(s, tasks)
    judge = make_judge(s)
    clients = OrgClients(s) if pending else None
    if clients is not None:
        clients.client()  # a refused or unreachable org stops the run here: no instance runs, no row is written
    lock = threading.Lock()
    fresh: dict[int, dict[str, Any]] = {}

    def one(inst: Instance) -> None:
        t0 = time.perf_counter()
        try:
            assert clients is not None
            conn = Connector(clients.client())
            episode = agent.start(inst, s.framework, conn)
            out = run_episode(
                s.framework,
                episode,
                system_for(s, tasks, inst),
                inst.query,
                conn,
                max_turns=s.max_turns,
                raw_queries=s.raw_queries,
            )
            row = result_row(s, inst, out, score(s, inst, out, judge))
        except (ModelUnavailable, OrgUnreachable) as exc:
            row = error_row(inst, exc, time.perf_counter() - t0)
        line = json.dumps(row, ensure_ascii=False, default=str)
        with lock:
            with results_path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
            fresh[inst.idx] = row
        if on_result is not None:
            on_result(row)

    if pending:
        with ThreadPoolExecutor(
            max_workers=min(s.concurrency, len(pending)), thread_name_prefix="eval"
        ) as pool:
            futures = [pool.submit(one, i) for i in pending]
            finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f.exception() for f in finished if f.exception() is not None]
            if failed:
                for f in futures:
                    f.cancel()
                pool.shutdown(wait=True, cancel_futures=True)
                _finish(s, run_dir, {**done, **fresh}, selected)
                exc = failed[0]
                assert exc is not None
                raise exc
    rows = _finish(s, run_dir, {**done, **fresh}, selected)
    board = json.loads((run_dir / "leaderboard.json").read_text(encoding="utf-8"))
    return EvalReport(
        run_dir,
        rows,
        board,
        ran=len(fresh),
        skipped=len(done),
        errors=sum(1 for r in rows if r.get("status") != "done"),
        seconds=time.perf_counter() - started,
        totals=totals(rows),
    )


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    done = [r for r in rows if r.get("status") == "done"]
    costs = [r.get("cost_usd") for r in done]
    return {
        "instances": len(rows),
        "done": len(done),
        "turns": sum(int(r.get("turns", 0)) for r in done),
        "tool_calls": sum(int(r.get("tool_calls", 0)) for r in done),
        "invalid_actions": sum(int(r.get("invalid_actions", 0)) for r in done),
        "tool_errors": sum(int(r.get("tool_errors", 0)) for r in done),
        "no_answer": sum(1 for r in done if r.get("end_reason") != "respond"),
        "requests": sum(int(r.get("requests", 0)) for r in done),
        "cache_hits": sum(int(r.get("cache_hits", 0)) for r in done),
        "prompt_tokens": sum(int(r.get("tokens", {}).get("prompt", 0)) for r in done),
        "completion_tokens": sum(int(r.get("tokens", {}).get("completion", 0)) for r in done),
        "cost_usd": None if any(c is None for c in costs) else round(sum(float(c) for c in costs if c), 6),
    }


def _finish(
    s: EvalSettings, run_dir: Path, by_idx: dict[int, dict[str, Any]], selected: list[Instance]
) -> list[dict[str, Any]]:
    rows = [by_idx[i.idx] for i in selected if i.idx in by_idx]
    _atomic_write(
        run_dir / RESULTS, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows)
    )
    row = board_row(s.label, s.framework, task_scores(rows), run=s.run_name, totals=totals(rows))
    _atomic_write(run_dir / "leaderboard.json", json.dumps(row, indent=2) + "\n")
    _atomic_write(run_dir / "leaderboard.md", markdown([row]))
    collect_leaderboard(Path(s.bundle))
    return rows


def collect_leaderboard(bundle: Path) -> list[dict[str, Any]]:
    """Gather every run's row into reports/eval/leaderboard.{json,md}."""
    root = bundle / "reports" / "eval"
    rows = []
    for p in sorted(root.glob("*/leaderboard.json")):
        try:
            rows.append(json.loads(p.read_text(encoding="utf-8")))
        except ValueError:
            continue
    _atomic_write(root / "leaderboard.json", json.dumps(rows, indent=2) + "\n")
    _atomic_write(root / "leaderboard.md", markdown(rows))
    return rows


# -- the dry run ------------------------------------------------------------------------------------------------------


def _chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


class _Counting:
    """Wraps the oracle's episode: each reply is priced as if a model had written it (≈ 4 characters a token
    for what the model reads and writes); nothing is sent to any model."""

    def __init__(self, inner: Any, price: dict[str, float] | None, thought_chars: int) -> None:
        from generator.text.usage import cost

        self.inner, self.price, self.thought_chars, self._cost = inner, price, thought_chars, cost

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Reply:
        r = self.inner.reply(messages, tools)
        pt = (_chars(messages) + (_chars(tools) if tools else 0)) // 4 + 1
        ct_ = (
            len(r.content or "") + (_chars(r.tool_calls) if r.tool_calls else 0) + self.thought_chars
        ) // 4 + 1
        r.prompt_tokens, r.completion_tokens, r.sent = pt, ct_, True
        r.cost = self._cost(pt, ct_, self.price)
        return r


def estimate(s: EvalSettings) -> dict[str, Any]:
    """What a model run of these settings would send: the oracle's path through the framework (real queries
    against the org, no model), priced per request. Models that explore take more turns than the oracle, up
    to --max-turns each, so this is the cost of the reference path; `ceiling` bounds a run that uses every turn."""
    check_settings(s)
    tasks = BundleTasks(s.bundle)
    selected = tasks.select(list(s.tasks) or None, s.per_task)
    model = s.model or "unknown"
    _, cache, price = _key_cache_price(s, model)
    clients = OrgClients(s)
    oracle = OracleAgent()
    first_hits = 0
    per_task: dict[str, dict[str, Any]] = {}
    for inst in selected:
        conn = Connector(clients.client())
        system = system_for(s, tasks, inst)
        if cache is not None:
            ms = _model_settings(s, model)
            tools = tool_schemas(s.raw_queries) if s.framework == "function-calling" else None
            first = [{"role": "system", "content": system}, {"role": "user", "content": inst.query.strip()}]
            if cache.get(cache_key(ms, request_body(ms, first, tools))) is not None:
                first_hits += 1
        ep = _Counting(oracle.start(inst, s.framework, conn), price, 120 if s.framework == "react" else 0)
        out = run_episode(
            s.framework, ep, system, inst.query, conn, max_turns=s.max_turns, raw_queries=s.raw_queries
        )
        row = per_task.setdefault(
            inst.task,
            {
                "instances": 0,
                "requests": 0,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "cost_usd": 0.0,
                "ceiling_prompt_tokens": 0,
            },
        )
        row["instances"] += 1
        row["requests"] += out.turns
        row["prompt_tokens"] += out.prompt_tokens
        row["completion_tokens"] += out.completion_tokens
        # every turn up to max_turns, each reading at least the largest prompt the oracle's path reached
        row["ceiling_prompt_tokens"] += s.max_turns * max(out.prompt_tokens // max(out.turns, 1), 1)
        if row["cost_usd"] is not None:
            row["cost_usd"] = None if out.cost is None else row["cost_usd"] + out.cost
    total: dict[str, Any] = {
        "instances": 0,
        "requests": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "ceiling_prompt_tokens": 0,
    }
    cost_total: float | None = 0.0
    for row in per_task.values():
        for k in total:
            total[k] += row[k]
        if row["cost_usd"] is None or cost_total is None:
            cost_total = None
        else:
            row["cost_usd"] = round(row["cost_usd"], 4)
            cost_total += row["cost_usd"]
    total["cost_usd"] = None if cost_total is None else round(cost_total, 4)
    total["ceiling_cost_usd"] = (
        None if price is None else round(total["ceiling_prompt_tokens"] * price["input"] / 1e6, 4)
    )
    from generator.text.usage import load_prices

    return {
        "model": model,
        "framework": s.framework,
        "tasks": per_task,
        "totals": total,
        "first_requests_cached": first_hits,
        "priced": price is not None,
        "prices": load_prices()[1],
    }
