"""Sandbox overhead per backend: create -> seed 3 files -> 10 execs -> collect -> destroy.

    python bench/sandbox_overhead.py [--iterations 30] [--backend bwrap --backend docker] [--json]

Prints the median and p95 of every phase and of the whole cycle per backend,
and the docker/bwrap ratio. One warm-up cycle per backend is not counted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from sandboxes.base import SandboxSpec  # noqa: E402
from sandboxes.registry import get_backend  # noqa: E402

PHASES = ("create", "seed", "exec x10", "collect", "destroy", "total")
SEED = {
    "data/measurements.csv": b"plot,flux\n" + b"".join(b"p%d,%d.%d\n" % (i, i % 7, i % 10) for i in range(2000)),
    "README.md": b"# task\nAnalyse the measurements.\n",
    "notes/context.txt": b"x" * 4096,
}
EXEC = ["sh", "-c", "wc -l data/measurements.csv"]


def cycle(backend_name: str, dest_root: Path) -> dict[str, float]:
    backend = get_backend(backend_name)
    t: dict[str, float] = {}
    t0 = time.perf_counter()
    box = backend.create(SandboxSpec(run_id=f"bench-{uuid.uuid4().hex[:8]}"))
    t1 = time.perf_counter()
    try:
        for path, data in SEED.items():
            box.write_file(path, data)
        t2 = time.perf_counter()
        for _ in range(10):
            r = box.exec(EXEC)
            if r.exit_code != 0:
                raise RuntimeError(f"{backend_name}: exec failed: {r.stderr}")
        t3 = time.perf_counter()
        box.collect(dest_root / uuid.uuid4().hex)
        t4 = time.perf_counter()
    finally:
        box.destroy()
    t5 = time.perf_counter()
    t.update({"create": t1 - t0, "seed": t2 - t1, "exec x10": t3 - t2, "collect": t4 - t3, "destroy": t5 - t4})
    t["total"] = t5 - t0
    return t


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(0.95 * (len(ordered) - 1))))]


def measure(backend_name: str, iterations: int) -> dict[str, dict[str, float]]:
    backend = get_backend(backend_name)
    ok, why = backend.available()
    if not ok:
        raise SystemExit(f"{backend_name} is unavailable: {why}")
    samples: dict[str, list[float]] = {p: [] for p in PHASES}
    with tempfile.TemporaryDirectory(prefix="il-bench-") as tmp:
        cycle(backend_name, Path(tmp))  # warm-up
        for _ in range(iterations):
            for phase, value in cycle(backend_name, Path(tmp)).items():
                samples[phase].append(value)
    return {p: {"median": statistics.median(v), "p95": p95(v)} for p, v in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--backend", action="append", dest="backends")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    backends = args.backends or ["bwrap", "docker"]
    results = {name: measure(name, args.iterations) for name in backends}
    if args.json:
        print(json.dumps({"iterations": args.iterations, "results": results}, indent=2))
        return 0
    table = Table(title=f"sandbox overhead, {args.iterations} cycles per backend (ms)")
    table.add_column("phase")
    for name in backends:
        table.add_column(f"{name} median", justify="right")
        table.add_column(f"{name} p95", justify="right")
    ratio = "docker" in results and "bwrap" in results
    if ratio:
        table.add_column("docker/bwrap (median)", justify="right")
    for phase in PHASES:
        row = [phase]
        for name in backends:
            row += [f"{results[name][phase]['median'] * 1000:.1f}", f"{results[name][phase]['p95'] * 1000:.1f}"]
        if ratio:
            d, b = results["docker"][phase]["median"], results["bwrap"][phase]["median"]
            row.append(f"{d / b:.1f}x" if b > 0 else "–")
        table.add_row(*row)
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
