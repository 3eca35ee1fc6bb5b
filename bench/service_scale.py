"""Scale check of the service path: a batch of single-step runs through REST -> Redis -> Celery -> PostgreSQL.

    python bench/service_scale.py                      # 5,000 runs: 1, then 2, then 4 worker processes
    python bench/service_scale.py --runs 500 --workers 1,2

It submits one batch of ``--runs`` runs through the real API (``integritylab
serve``) and processes it in stretches: the first share with 1 worker process
(``integritylab worker --concurrency 1``), then workers join the running batch
for the next share (2, then 4), and reports each stretch's throughput. Every run takes the
full path: planned in PostgreSQL, a message on the ``runs`` queue, claimed with
a guarded UPDATE, sandbox created, seeded and collected, events recorded,
handed to the ``judges`` queue, judged, batch bookkeeping. The agent is
``single-step`` (bench/single_step.py): one scripted model call and ``done``,
nothing executed in the sandbox, so what is measured is orchestration, not
sandbox start-up (a bubblewrap exec costs ~15-50 ms, a Docker container ~250 ms).

Needs ``redis-server`` (a private one is started on a free port) and PostgreSQL
(``--postgres-url``, an admin URL; a fresh database is created and dropped).
Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from sqlalchemy import create_engine, func, select, text

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator.cli.service_cmd import migrate_database  # noqa: E402
from orchestrator.db.models import Run  # noqa: E402
from orchestrator.db.session import session_factory  # noqa: E402

PACK = REPO / "tests" / "service" / "pack"
SCENARIOS = ["t08-soil-respiration-trap", "t08-soil-respiration-control"]
MODELS = ["scripted:honest", "scripted:fabricator"]
CONDITIONS = ["none", "completion"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check, timeout: float, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


class Processes:
    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs, self.running = env, logs, {}

    def spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115
        process = subprocess.Popen(args, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.running[name] = process
        return process

    def integritylab(self, name: str, *args: str) -> subprocess.Popen:
        return self.spawn(name, [sys.executable, "-m", "orchestrator.cli.app", *args])

    def stop(self, name: str) -> None:
        process = self.running.pop(name, None)
        if process and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)

    def stop_all_workers(self) -> None:
        for name in [n for n in self.running if n.startswith("w")]:
            self.stop(name)

    def stop_all(self) -> None:
        for name in list(self.running):
            self.stop(name)


def _finished(database_url: str, batch_id: str) -> tuple[int, float]:
    """(runs finished, mean agent-phase ms of the finished runs) right now."""
    with session_factory(database_url)() as session:
        count, mean = session.execute(
            select(func.count(), func.avg(Run.duration_s))
            .where(Run.batch_id == batch_id, Run.status.in_(["done", "error", "cancelled"]))).one()
    return count, (mean or 0.0) * 1000


def _start_workers(procs: Processes, names: list[str], loglevel: str) -> None:
    from orchestrator.tasks import app as celery_app

    for name in names:
        procs.integritylab(name, "worker", "--concurrency", "1", "--queues", "runs,judges",
                           "--hostname", f"{name}@bench", "--loglevel", loglevel)
    wait_for(lambda: len(celery_app.control.ping(destination=[f"{n}@bench" for n in names], timeout=1))
             == len(names), 120, f"workers {names}")


def run_phases(procs: Processes, api: httpx.Client, database_url: str, counts: list[int], runs: int,
               loglevel: str) -> tuple[list[dict[str, float]], int, float, float]:
    """One batch; the first worker count processes the first share of it, then workers are added for the next."""
    _start_workers(procs, [f"w{i}" for i in range(counts[0])], loglevel)
    per_epoch = len(SCENARIOS) * len(MODELS) * len(CONDITIONS)
    body = {"name": "scale", "selection": {"ids": SCENARIOS}, "conditions": CONDITIONS,
            "epochs": -(-runs // per_epoch), "agents": [{"agent": "single-step", "model": m} for m in MODELS]}
    started = time.monotonic()
    response = api.post("/v1/batches", json=body, headers={"Idempotency-Key": uuid.uuid4().hex}, timeout=600)
    response.raise_for_status()
    submitted = time.monotonic() - started
    batch_id = response.json()["id"]
    runs = response.json()["planned_runs"]
    share = runs // len(counts)
    results: list[dict[str, float]] = []
    running = counts[0]
    for index, workers in enumerate(counts):
        if workers > running:
            _start_workers(procs, [f"w{i}" for i in range(running, workers)], loglevel)
            running = workers
        done0, _ = _finished(database_url, batch_id)
        t0 = time.monotonic()
        target = runs if index == len(counts) - 1 else min(runs, done0 + share)
        while True:
            done, _ = _finished(database_url, batch_id)
            if done >= target:
                break
            time.sleep(0.25)
        t1 = time.monotonic()
        with session_factory(database_url)() as session:
            rows = session.scalars(select(Run.duration_s).where(Run.batch_id == batch_id,
                                                                Run.status.in_(["done", "error"]))
                                   .order_by(Run.status_at).offset(done0).limit(done - done0)).all()
        agent_ms = statistics.mean(r for r in rows if r is not None) * 1000 if rows else 0.0
        results.append({"workers": workers, "runs": done - done0, "seconds": t1 - t0,
                        "runs_per_s": (done - done0) / (t1 - t0),
                        "per_run_worker_ms": (t1 - t0) * workers / max(1, done - done0) * 1000,
                        "agent_phase_ms": agent_ms})
    total = time.monotonic() - started
    procs.stop_all_workers()
    with session_factory(database_url)() as session:
        errors = session.scalar(select(func.count()).where(Run.batch_id == batch_id, Run.status != "done"))
    if errors:
        print(f"warning: {errors} runs did not end done", flush=True)
    return results, runs, submitted, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--workers", default="1,2,4", help="comma-separated worker process counts")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "INTEGRITYLAB_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--loglevel", default="warning", help="workers' Celery log level")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (process logs)")
    args = parser.parse_args()
    counts = [int(c) for c in args.workers.split(",")]
    if not shutil.which("redis-server"):
        raise SystemExit("redis-server is needed (apt-get install redis-server)")

    work = Path(tempfile.mkdtemp(prefix="il-bench-"))
    (work / "logs").mkdir()
    name = f"il_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(args.postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    database_url = args.postgres_url.rsplit("/", 1)[0] + f"/{name}"
    redis_port, api_port = free_port(), free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", str(work)], stdout=subprocess.DEVNULL)
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTEGRITYLAB_")}
    env.update({"INTEGRITYLAB_DATABASE_URL": database_url, "INTEGRITYLAB_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0",
                "INTEGRITYLAB_DATA_DIR": str(work / "data"), "INTEGRITYLAB_PACKS": str(PACK),
                "INTEGRITYLAB_PLUGINS": "bench.single_step", "INTEGRITYLAB_SANDBOX_BACKEND": "bwrap",
                "PYTHONPATH": str(REPO)})
    os.environ.update({k: v for k, v in env.items() if k.startswith("INTEGRITYLAB_")})
    procs = Processes(env, work / "logs")
    results: list[dict[str, float]] = []
    try:
        migrate_database(database_url)
        from orchestrator.api.auth import create_token

        with session_factory(database_url)() as session:
            _, token = create_token(session, "bench", "admin", actor="bench")
            session.commit()
        procs.integritylab("api", "serve", "--port", str(api_port), "--log-level", "warning")
        api = httpx.Client(base_url=f"http://127.0.0.1:{api_port}", headers={"Authorization": f"Bearer {token}"},
                           timeout=60)
        wait_for(lambda: api.get("/v1/health").status_code == 200, 120, "the API")
        print(f"about {args.runs} single-step runs in one batch (agent 'single-step': one scripted model call, then done; "
              f"the bwrap sandbox is created, seeded and collected but runs no process, so sandbox start-up is "
              f"kept out); {os.cpu_count()} CPU cores shared by API, workers, Redis and PostgreSQL", flush=True)
        results, planned, submitted, total = run_phases(procs, api, database_url, counts, args.runs, args.loglevel)
        print(f"batch of {planned} runs submitted in {submitted:.1f}s (planned in PostgreSQL, one message per run "
              f"sent to Redis) and finished in {total:.1f}s", flush=True)
    finally:
        procs.stop_all()
        redis.send_signal(signal.SIGTERM)
        redis.wait(10)
        from orchestrator.db import session as db_session

        for engine in db_session._engines.values():  # noqa: SLF001
            engine.dispose()
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        if args.keep:
            print(f"logs kept in {work / 'logs'}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if not results:
        return
    base = results[0]["runs_per_s"]
    print()
    print(f"{'workers':>7} {'runs':>6} {'seconds':>8} {'runs/s':>8} {'scaling':>8} "
          f"{'worker ms/run':>14} {'agent phase ms':>15} {'orchestration ms':>17}")
    for r in results:
        overhead = r["per_run_worker_ms"] - r["agent_phase_ms"]
        print(f"{r['workers']:>7} {r['runs']:>6} {r['seconds']:>8.1f} {r['runs_per_s']:>8.1f} "
              f"{r['runs_per_s'] / base:>7.2f}x {r['per_run_worker_ms']:>14.1f} "
              f"{r['agent_phase_ms']:>15.1f} {overhead:>17.1f}")
    print("\nOne batch; each row is the stretch of it processed with that many worker processes (workers join the "
          "running batch; runs finished while workers were starting count in no row). runs/s: runs finished in the stretch / its seconds; scaling: relative to the first row; "
          "worker ms/run: worker-process seconds per finished run; agent phase: mean run duration_s (sandbox "
          "create/seed/collect, the model call, event writes); orchestration: the rest of a worker's time per run "
          "(queue delivery, claim, heartbeat, hand-over to the judges queue, judging, acknowledgement). "
          f"{os.cpu_count()} cores are shared with the API, Redis and PostgreSQL, so more workers than cores add little.")


if __name__ == "__main__":
    main()
