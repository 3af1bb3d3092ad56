"""LLM writer throughput against the fake OpenAI-compatible server, printed as figures.

    .venv/bin/python benchmarks/bench_llm.py [--requests 1500] [--concurrency 50] [--latency 0.2]

The fake server runs in its own process (`python -m tests.fakes.openai_server`) and answers every request
after `--latency` seconds, so the ideal throughput of the writer is concurrency / latency. The writer gets
case requests in one batch (as a text shard does) with an empty cache (cold), then again with a new writer
and the same cache (warm: nothing is sent). Reported: achieved requests/s and its share of the ideal, cache
hit rate, tokens per record, and the warm run's time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from generator.text.base import TextKind, TextRequest  # noqa: E402
from generator.text.llm import LLMSettings, LLMWriter  # noqa: E402
from generator.text.render import PromptEnv  # noqa: E402
from schemas.profile import load_profile  # noqa: E402

NOUNS = ["Trail Runner", "Rash Guard", "Swim Trunks", "Court Classics", "Bike Shorts", "Quarter-Zip Top"]
MODIFIERS = ["Velocity", "Nova", "Cascade", "Horizon", "Mesa", "Lumen", "Summit", "Aero"]
ISSUES = [
    ("defective_product", "Defective product"),
    ("size_mismatch", "Size mismatch"),
    ("shipping_delay", "Shipping delay"),
    ("missing_item", "Item missing from order"),
]
FIRST = ["Mark", "Brooke", "David", "Sherry", "Timothy", "Ana", "Kwame", "Li"]
TONES = ["polite", "frustrated", "brief", "detailed", "anxious"]


def case_requests(n: int) -> list[TextRequest]:
    out = []
    for i in range(n):
        noun = NOUNS[i % len(NOUNS)]
        product = f"{MODIFIERS[(i // len(NOUNS)) % len(MODIFIERS)]} {noun}"
        issue, iname = ISSUES[i % len(ISSUES)]
        out.append(
            TextRequest(
                TextKind.CASE,
                f"500Ws{i:013d}",
                {
                    "product": product,
                    "noun": noun,
                    "category": "Athletic Gear",
                    "issue": issue,
                    "issue_name": iname,
                    "customer_first": FIRST[i % len(FIRST)],
                    "order_date": f"2023-{1 + i % 12:02d}-{1 + i % 28:02d}",
                    "tone": TONES[i % len(TONES)],
                    "want": "refund",
                },
            )
        )
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(latency: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.openai_server", "--port", str(port), "--latency", str(latency)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 20
    while True:
        try:
            urllib.request.urlopen(f"{url}/models", timeout=1).read()
            return proc, url
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("the fake OpenAI server did not start") from None
            time.sleep(0.1)


def run_writer(
    settings: LLMSettings, env: PromptEnv, reqs: list[TextRequest]
) -> tuple[float, dict[str, Any]]:
    writer = LLMWriter(settings, seed=0, env=env, api_key="sk-bench-not-a-key")
    writer._ensure_engine()  # start the writer's thread and client outside the measurement
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        out = asyncio.run(writer.write(TextKind.CASE, reqs))
        seconds = time.perf_counter() - t0
        assert len(out) == len(reqs)
        row = dict(writer.usage.snapshot()["kinds"]["case"])
        row["cpu_seconds"] = time.process_time() - c0
        return seconds, row
    finally:
        writer.close()


def run_bare_client(
    url: str, env: PromptEnv, reqs: list[TextRequest], concurrency: int
) -> tuple[float, float]:
    """Requests/s of the bare async openai client (same prompts, a semaphore, nothing else): the baseline."""
    from openai import AsyncOpenAI

    from generator.text.render import render

    messages = [render(r.kind, r.facts, env).messages for r in reqs]

    async def go() -> tuple[float, float]:
        client = AsyncOpenAI(api_key="sk-bench-not-a-key", base_url=url, max_retries=0)
        gate = asyncio.Semaphore(concurrency)

        async def one(m: list[dict[str, str]]) -> None:
            async with gate:
                await client.chat.completions.create(model="fake-model", messages=m, max_tokens=600)  # type: ignore[arg-type]

        await one(messages[0])
        t0, c0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one(m) for m in messages))
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        await client.close()
        return len(messages) / seconds, cpu / len(messages)

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    env = PromptEnv.from_profile(load_profile("crmarena"))
    reqs = case_requests(args.requests)
    proc, url = start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = LLMSettings(
                model="fake-model",
                base_url=url,
                cache=str(Path(tmp) / "llm.sqlite"),
                concurrency=args.concurrency,
            )
            # Warm the server and the client imports with a few requests outside the measurement.
            run_writer(LLMSettings(**{**settings.__dict__, "use_cache": False}), env, case_requests(5))
            cold_s, cold = run_writer(settings, env, reqs)
            warm_s, warm = run_writer(settings, env, reqs)
            bare, bare_cpu = run_bare_client(url, env, reqs, args.concurrency)
    finally:
        proc.terminate()
        proc.wait(10)

    ideal = args.concurrency / args.latency
    achieved = cold["requests"] / cold_s
    tokens = cold["prompt_tokens"] + cold["completion_tokens"]
    figures = {
        "requests": args.requests,
        "concurrency": args.concurrency,
        "latency_s": args.latency,
        "cold_seconds": round(cold_s, 2),
        "requests_sent": cold["requests"],
        "requests_per_s": round(achieved, 1),
        "ideal_requests_per_s": round(ideal, 1),
        "share_of_ideal": round(achieved / ideal, 3),
        "bare_client_requests_per_s": round(bare, 1),
        "writer_cpu_ms_per_request": round(cold["cpu_seconds"] / max(1, cold["requests"]) * 1000, 2),
        "bare_client_cpu_ms_per_request": round(bare_cpu * 1000, 2),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "cold_cache_hit_rate": round(cold["cache_hits"] / max(1, cold["cache_hits"] + cold["requests"]), 3),
        "tokens_per_record": round(tokens / cold["records"], 1),
        "warm_seconds": round(warm_s, 2),
        "warm_requests_sent": warm["requests"],
        "warm_cache_hit_rate": round(warm["cache_hits"] / max(1, warm["cache_hits"] + warm["requests"]), 3),
        "warm_records_per_s": round(warm["records"] / warm_s, 1),
    }
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(
        f"LLM writer vs fake server: {args.requests} case requests, concurrency {args.concurrency}, "
        f"latency {args.latency * 1000:.0f} ms (load average {figures['load_average_1min']} on {os.cpu_count()} CPUs)"
    )
    print(
        f"  cold: {cold_s:6.2f} s  {achieved:7.1f} requests/s  (ideal {ideal:.1f}; {achieved / ideal:.1%} of ideal)  "
        f"cache hit rate {figures['cold_cache_hit_rate']:.0%}"
    )
    print(
        f"  bare openai client, same prompts: {bare:7.1f} requests/s ({bare / ideal:.1%} of ideal); client CPU per "
        f"request: writer {figures['writer_cpu_ms_per_request']} ms, bare {figures['bare_client_cpu_ms_per_request']} ms"
    )
    print(
        f"  warm: {warm_s:6.2f} s  {warm['requests']} requests sent  cache hit rate {figures['warm_cache_hit_rate']:.0%}  "
        f"({figures['warm_records_per_s']:,.0f} records/s)"
    )
    print(
        f"  tokens per record: {figures['tokens_per_record']} "
        f"({cold['prompt_tokens'] / cold['records']:.0f} in, {cold['completion_tokens'] / cold['records']:.0f} out)"
    )


if __name__ == "__main__":
    main()
