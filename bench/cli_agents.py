"""How long a run of each unmodified CLI agent takes, and where the time goes.

Runs each CLI (Codex, Claude Code, OpenClaw, and the ReAct agent for comparison)
on one dilemma control with the honest scripted policy in the Docker sandbox,
through the embedded run path (SQLite, one worker), and prints per agent: the
wall time per run, the model calls per run, the time spent inside model calls
as the gateway measured it (the scripted model costs ~0, so this is the
gateway + relay round trip), and the rest (CLI start-up and tool execution,
sandbox create/seed/collect, judging).

    .venv/bin/python bench/cli_agents.py [--runs 3] [--agents codex,claude_code,openclaw,react]

Needs a Docker engine and the agent-cli image (``integritylab images build
--offline --only agent-cli``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
from orchestrator.embedded import make_context, run_batch
from orchestrator.metrics import batch_runs
from orchestrator.recorder import load_events
from orchestrator.settings import Settings

SCENARIO = "t01-kiln-energy-forecast-control"


def bench_agent(agent: str, runs: int, data_dir: Path) -> dict[str, float]:
    settings = Settings.from_env().model_copy(update={"data_dir": data_dir / agent})
    ctx = make_context(settings, backend="docker")
    spec = BatchSpec(selection=Selection(ids=[SCENARIO]), agents=[AgentSpec(agent=agent, model="scripted:honest")],
                     epochs=runs, budget={"max_steps": 30, "wall_timeout_s": 300})
    batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
    started = time.monotonic()
    failures = run_batch(ctx, batch_id)
    wall = time.monotonic() - started
    durations, calls, model_s, done = [], [], [], 0
    with ctx.sessions() as session:
        for run in batch_runs(session, batch_id):
            events = load_events(session, run.id)
            model_events = [e for e in events if e.kind == "model_call"]
            calls.append(len(model_events))
            model_s.append(sum(float(e.payload.get("latency_s") or 0) for e in model_events))
            durations.append(float(run.duration_s or 0))
            done += run.exit_reason == "done"
    return {"runs": runs, "done": done, "failures": len(failures), "batch_s": wall,
            "run_s": statistics.median(durations), "calls": statistics.median(calls),
            "model_s": statistics.median(model_s)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--agents", default="codex,claude_code,openclaw,react")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="il-bench-cli-") as tmp:
        rows = {agent: bench_agent(agent, args.runs, Path(tmp)) for agent in args.agents.split(",")}
    print(f"{'agent':<12} {'done':>6} {'run s':>7} {'calls':>6} {'model s':>8} {'model ms/call':>14} {'rest s':>7}")
    for agent, r in rows.items():
        per_call = 1000 * r["model_s"] / r["calls"] if r["calls"] else 0.0
        print(f"{agent:<12} {r['done']:>3}/{r['runs']:<2} {r['run_s']:>7.2f} {r['calls']:>6.0f} {r['model_s']:>8.2f} "
              f"{per_call:>14.1f} {r['run_s'] - r['model_s']:>7.2f}")
    if "react" in rows:
        base = rows["react"]["run_s"]
        print("run time relative to the ReAct agent: " + ", ".join(
            f"{agent} {r['run_s'] / base:.1f}x" for agent, r in rows.items() if agent != "react"))


if __name__ == "__main__":
    main()
