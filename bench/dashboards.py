"""The dashboards at scale (not a test): the agents overview and the heatmap over many runs on PostgreSQL.

Issue #16 asks that the overview and the heatmap answer in under 300 ms (p95) with 100,000 runs stored.
This creates a fresh PostgreSQL database, fills it with ``--runs`` finished runs (8 agents × 3 conditions
over the 66 dilemma scenarios and some probe runs, with epochs, verdicts, tokens and runtimes drawn from a
seeded generator), signs an admin in and times ``--repeat`` requests of each page in one process (the
app through Starlette's test client, so no network is measured). It prints the median and p95 of each
page, filtered and unfiltered, and drops the database at the end.

    python bench/dashboards.py [--runs 100000] [--repeat 20] [--admin-url postgresql+psycopg://postgres@127.0.0.1/postgres]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

AGENTS = [("react", f"bench:model-{i}") for i in range(6)] + [("codex", "bench:model-0"), ("claude_code", "bench:model-1")]
CONDITIONS = ("none", "completion", "PP4")
VERDICTS = ("Pass", "Flawed", "Fail", "Error")


def seed(url: str, n_runs: int) -> str:
    """Insert ``n_runs`` finished runs in one batch with Core inserts (the ORM would dominate the set-up)."""
    from sqlalchemy import insert

    from orchestrator.db.models import Batch, Run
    from orchestrator.db.session import session_factory
    from scenarios.loader import load_catalog

    scenarios = [(s.id, s.scenario.family.value, s.scenario.category or "", s.scenario.role.value)
                 for s in load_catalog().select(family="dilemma")]
    rng = random.Random(16)
    sessions = session_factory(url)
    now = datetime.now(UTC)
    with sessions() as session:
        batch = Batch(name="dashboard bench", created_by="bench", status="done")
        session.add(batch)
        session.commit()
        batch_id = batch.id
    rows = []
    for i in range(n_runs):
        agent, model = AGENTS[i % len(AGENTS)]
        scenario, family, category, role = scenarios[(i // len(AGENTS)) % len(scenarios)]
        verdict = rng.choices(VERDICTS, weights=(55, 15, 25, 5))[0]
        rows.append({
            "id": uuid.uuid4().hex[:16], "batch_id": batch_id, "created_at": now + timedelta(microseconds=i),
            "scenario_id": scenario, "family": family, "category": category, "role": role, "agent": agent,
            "model": model, "condition": CONDITIONS[(i // (len(AGENTS) * len(scenarios))) % len(CONDITIONS)],
            "epoch": i // (len(AGENTS) * len(scenarios) * len(CONDITIONS)), "seed": i, "params": {},
            "status": "done", "verdict": verdict, "pathology_recognised": verdict == "Pass" and rng.random() < 0.9,
            "completed": verdict != "Error" and rng.random() < 0.95,
            "error_layer": "sandbox" if verdict == "Error" else None, "duration_s": rng.uniform(2, 60),
            "input_tokens": rng.randint(500, 20000), "output_tokens": rng.randint(100, 4000), "steps": 8,
            "attempt": 1, "trajectory_from_seq": 0, "failures": [],
        })
    with sessions() as session:
        for start in range(0, len(rows), 5000):
            session.execute(insert(Run), rows[start:start + 5000])
        session.commit()
    return batch_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--no-vacuum", action="store_true",
                        help="time the pages straight after seeding, before any vacuum has run")
    parser.add_argument("--admin-url", default=os.environ.get(
        "INTEGRITYLAB_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"))
    args = parser.parse_args()
    from sqlalchemy import create_engine, text

    name = f"il_dash_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(args.admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = args.admin_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        run(url, args)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def run(url: str, args: argparse.Namespace) -> None:
    os.environ["INTEGRITYLAB_DATA_DIR"] = tempfile.mkdtemp(prefix="dash-bench-")
    os.environ["INTEGRITYLAB_DATABASE_URL"] = url
    from fastapi.testclient import TestClient

    from orchestrator.api.app import create_app
    from orchestrator.cli.service_cmd import migrate_database
    from orchestrator.db.session import session_factory
    from orchestrator.settings import Settings
    from tests.annotation_support import PASSWORD, make_users

    migrate_database(url)
    started = time.perf_counter()
    batch_id = seed(url, args.runs)
    print(f"seeded {args.runs} runs in {time.perf_counter() - started:.1f} s")
    if not args.no_vacuum:
        # what autovacuum has done by the time anyone looks: the triggers left a dead cell row per run
        # inserted, and the runtime index is read without visiting the table once the visibility map is set
        from sqlalchemy import create_engine, text
        with create_engine(url, isolation_level="AUTOCOMMIT").connect() as connection:
            connection.execute(text("VACUUM ANALYZE runs"))
            connection.execute(text("VACUUM ANALYZE score_cells"))
    make_users(session_factory(url), ["boss"], role="admin")
    client = TestClient(create_app(Settings.from_env()), base_url="http://127.0.0.1")
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").text)
    assert token is not None
    client.post("/login", data={"name": "boss", "password": PASSWORD, "csrf_token": token.group(1)})

    def timed(path: str, **params: str) -> tuple[float, float]:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            answer = client.get(path, params=params)
            times.append(time.perf_counter() - start)
            assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])
        times.sort()
        return statistics.median(times), times[max(0, round(0.95 * len(times)) - 1)]

    rows = [("overview, all runs", *timed("/dashboard")),
            ("overview, one batch and condition", *timed("/dashboard", batch=batch_id, condition="none")),
            ("heatmap, all runs", *timed("/dashboard/heatmap")),
            ("heatmap, one condition", *timed("/dashboard/heatmap", condition="PP4"))]
    print(f"{'page':<36} {'median ms':>10} {'p95 ms':>8}")
    for page, median, p95 in rows:
        print(f"{page:<36} {median * 1000:>10.0f} {p95 * 1000:>8.0f}")
    worst = max(p95 for _, _, p95 in rows)
    print(f"summary: {args.runs} runs on PostgreSQL: worst p95 {worst * 1000:.0f} ms "
          f"(goal 300 ms: {worst * 1000 / 300:.2f}× the goal)")


if __name__ == "__main__":
    main()
