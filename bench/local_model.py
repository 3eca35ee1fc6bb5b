"""How fast a local model drives the ReAct agent here, so users can size real-model batches.

Runs the ReAct agent with a ``local:`` model on one dilemma trap and its control
(bubblewrap sandbox, embedded run path, one worker: the server has one slot) and
prints, per model:

- generation speed: output tokens / model-call latency, over all calls;
- per-step latency (median, p90, max) and prompt tokens per step;
- per-run wall time and steps, and how the runs ended;
- time outside model calls (sandbox, tools, judging) per run.

Before the runs, it times one short completion so the raw tokens/s can be seen
apart from the agent's long prompts.

    .venv/bin/python bench/local_model.py [--models qwen2.5-coder-0.5b,qwen2.5-coder-1.5b] [--epochs 1]
        [--max-steps 6] [--max-tokens 600]

Needs the weights (``integritylab models install NAME``) and the ``[local]`` extra.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from agents.local.provider import MAX_TOKENS_ENV
from agents.local.store import MODELS_DIR_ENV, installed_path, models_dir
from agents.models.base import ChatMessage, ModelRequest
from agents.models.registry import make_provider
from orchestrator.batches import AgentSpec, BatchSpec, RunBudget, Selection, plan_batch
from orchestrator.embedded import make_context, run_batch
from orchestrator.metrics import batch_runs
from orchestrator.recorder import load_events
from orchestrator.settings import Settings

SCENARIOS = ["t08-soil-respiration-trap", "t08-soil-respiration-control"]


def quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def raw_speed(spec: str) -> tuple[float, float]:
    """(seconds, tokens/s) of one 200-token completion on a short prompt, after a warm-up call."""
    provider = make_provider(spec)
    request = ModelRequest(messages=[ChatMessage(role="user", content="Describe soil respiration in 150 words.")],
                           max_tokens=200)
    provider.complete(request)
    started = time.monotonic()
    reply = provider.complete(request)
    took = time.monotonic() - started
    return took, reply.usage.output_tokens / took if took else float("nan")


def bench_model(name: str, epochs: int, max_steps: int, data_dir: Path) -> None:
    spec = f"local:{name}"
    took, speed = raw_speed(spec)
    ctx = make_context(Settings.from_env().model_copy(update={"data_dir": data_dir / name}), backend="bwrap")
    batch = BatchSpec(selection=Selection(ids=SCENARIOS), agents=[AgentSpec(model=spec)], epochs=epochs,
                      budget=RunBudget(max_steps=max_steps, max_repeated_calls=3))
    batch_id, count = plan_batch(ctx.sessions, ctx.catalog, batch)
    started = time.monotonic()
    failures = run_batch(ctx, batch_id, workers=1)
    wall = time.monotonic() - started
    latencies: list[float] = []
    prompts: list[int] = []
    out_tokens = 0
    model_s = 0.0
    durations: list[float] = []
    steps: list[int] = []
    endings: dict[str, int] = {}
    with ctx.sessions() as session:
        for run in batch_runs(session, batch_id):
            events = [e for e in load_events(session, run.id) if e.kind == "model_call"]
            latencies += [float(e.payload.get("latency_s") or 0) for e in events]
            prompts += [int(e.payload.get("input_tokens") or 0) for e in events]
            out_tokens += sum(int(e.payload.get("output_tokens") or 0) for e in events)
            model_s += sum(float(e.payload.get("latency_s") or 0) for e in events)
            durations.append(float(run.duration_s or 0))
            steps.append(run.steps)
            ending = run.exit_reason or f"error:{run.error_layer}"
            endings[ending] = endings.get(ending, 0) + 1
    print(f"\n{spec}: {count} runs in {wall:.0f} s ({len(failures)} escaped failures)")
    print(f"  raw generation: {speed:.1f} tokens/s (200 tokens in {took:.1f} s)")
    print(f"  in the agent:   {out_tokens / model_s if model_s else float('nan'):.1f} output tokens/s over "
          f"{len(latencies)} model calls")
    print(f"  per step:       median {statistics.median(latencies):.1f} s, p90 {quantile(latencies, 0.9):.1f} s, "
          f"max {max(latencies):.1f} s; prompt median {statistics.median(prompts):.0f} tokens, max {max(prompts)}")
    print(f"  per run:        median {statistics.median(durations):.0f} s, max {max(durations):.0f} s; "
          f"steps median {statistics.median(steps):.0f}; outside model calls "
          f"{(sum(durations) - model_s) / len(durations):.1f} s per run")
    print(f"  endings:        {', '.join(f'{k} {v}' for k, v in sorted(endings.items()))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="qwen2.5-coder-0.5b,qwen2.5-coder-1.5b")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=600, help="reply token cap (INTEGRITYLAB_LOCAL_MAX_TOKENS)")
    args = parser.parse_args()
    os.environ.setdefault(MODELS_DIR_ENV, str(models_dir()))
    os.environ[MAX_TOKENS_ENV] = str(args.max_tokens)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    missing = [n for n in names if installed_path(n) is None]
    if missing:
        raise SystemExit(f"not installed: {', '.join(missing)}; run `integritylab models install NAME`")
    print(f"{os.cpu_count()} CPUs; scenarios {', '.join(SCENARIOS)}; --max-steps {args.max_steps}, "
          f"reply cap {args.max_tokens} tokens")
    with tempfile.TemporaryDirectory(prefix="il-bench-local-") as tmp:
        for name in names:
            bench_model(name, args.epochs, args.max_steps, Path(tmp))


if __name__ == "__main__":
    main()
