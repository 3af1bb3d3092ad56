"""`orgseed eval` throughput and harness overhead against the fake OpenAI server, printed as figures.

    .venv/bin/python benchmarks/bench_eval.py [--bundle PATH] [--latency 0.05] [--concurrency 8] [--per-task 10]

Builds a small bundle (scale 0.2, 10 instances per task) unless `--bundle` names one, serves it in-process
(the embedded org over loopback HTTPS, as `orgseed eval` does), and runs each framework with the real
`openai` client against the fake server scripted as an agent (tests/fakes/agent_script.py, "oracle": one
action, then the answer). The fake server runs in its own process and answers after `--latency` seconds.

Reported per framework: instances/s, turns, and the harness overhead per turn, two ways:
- beyond the model call: (instance wall time − time inside the openai client call) / turns — the framework
  loop, tool dispatch, the org's queries, scoring and the results file;
- beyond the server's latency: (instance wall time − turns × latency) / turns — the above plus the HTTP
  round trip and the openai client's own work.
Target: under 10 ms per turn beyond the model's latency.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evals.runner import EvalSettings, run_eval  # noqa: E402

SERVER = """
import sys, time
from pathlib import Path
from tests.fakes.agent_script import ScriptedAgent
from tests.fakes.openai_server import FakeConfig, FakeOpenAI
agent = ScriptedAgent(Path(sys.argv[1]), "oracle")
fake = FakeOpenAI(FakeConfig(latency=float(sys.argv[2]), agent=agent), port=int(sys.argv[3])).start()
print("ready", flush=True)
while True:
    time.sleep(3600)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_bundle(out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "flows.cli", "build", "--scale", "0.2", "--per-task", "10", "--out", str(out),
         "--no-prefect", "--force"],
        cwd=REPO, check=True, capture_output=True,
    )  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bundle", type=Path, default=None)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--per-task", type=int, default=10)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-eval-"))
    try:
        if args.bundle is None:
            t0 = time.perf_counter()
            bundle = build_bundle(work / "bundle")
            print(f"built a scale-0.2 bundle in {time.perf_counter() - t0:.1f} s")
        else:
            bundle = work / "bundle"
            shutil.copytree(args.bundle, bundle)
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(bundle / "tasks" / "tasks.json"), str(args.latency), str(port)],
            cwd=REPO, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert server.stdout is not None and server.stdout.readline().strip() == "ready"
            base = f"http://127.0.0.1:{port}/v1"
            urllib.request.urlopen(f"{base}/models", timeout=10).read()
            print(f"fake server latency {args.latency * 1000:.0f} ms · concurrency {args.concurrency} · "
                  f"{args.per_task} instances per task")  # fmt: skip
            for framework in ("function-calling", "react", "act"):
                settings = EvalSettings(
                    bundle=str(bundle), model="fake-agent", base_url=base, framework=framework,
                    per_task=args.per_task, concurrency=args.concurrency, no_cache=True, run=f"bench-{framework}",
                )  # fmt: skip
                t0 = time.perf_counter()
                report = run_eval(settings)
                wall = time.perf_counter() - t0
                rows = [r for r in report.rows if r["status"] == "done"]
                turns = sum(r["turns"] for r in rows)
                beyond_call = sum(r["latency_s"] - r["model_s"] for r in rows) / turns
                beyond_latency = sum(r["latency_s"] - r["turns"] * args.latency for r in rows) / turns
                score = report.board["Overall"]
                print(
                    f"{framework:16s} {len(rows) / wall:6.1f} instances/s · {turns} turns · overhead per turn "
                    f"{beyond_call * 1000:5.1f} ms beyond the model call, {beyond_latency * 1000:5.1f} ms beyond "
                    f"the server's latency · score {score}"
                )
                (work / f"{framework}.json").write_text(json.dumps(report.totals))
        finally:
            server.terminate()
            server.wait(timeout=10)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
