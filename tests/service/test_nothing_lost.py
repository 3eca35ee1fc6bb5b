"""Nothing is lost: the real API, Celery workers and beat as processes, real PostgreSQL, a private Redis.

Each test breaks one thing for real — SIGKILL to a whole worker, SIGKILL to one
pool process, Redis killed and restarted empty, the API killed and restarted —
and checks that every run still ends (done, or error in the orchestrator
layer), that every event written before the break is still there unchanged,
and that no run is left ``running``. Runs use bubblewrap sandboxes and scripted
models; ``slow:honest`` sleeps before each model reply so a run can be killed
in the middle. ``slow:*`` runs are limited to one at a time across all workers
(INTEGRITYLAB_MODEL_LIMITS), which the last test checks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import select

from orchestrator.db.models import Batch, EventRow, Run
from orchestrator.db.session import session_factory
from tests.conftest import requires_bwrap
from tests.service.conftest import (
    CONTROL, REPO, TRAP, Stack, admin_token, requires_postgres, requires_redis, wait_for,
)

pytestmark = [requires_postgres, requires_redis, requires_bwrap]
ENDED = ("done", "error", "cancelled", "awaiting_review")


@pytest.fixture(scope="module")
def live(stack: Stack) -> Iterator[tuple[Stack, httpx.Client]]:
    stack.extra_env.update({"INTEGRITYLAB_MODEL_LIMITS": "slow:*=1", "INTEGRITYLAB_TEST_SLOW_S": "0.4"})
    stack.start_api()
    token = admin_token(stack.database_url)
    stack.extra_env["INTEGRITYLAB_API_TOKEN"] = token
    with httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        yield stack, client


def _submit(client: httpx.Client, body: dict, key: str | None = None) -> dict:
    response = client.post("/v1/batches", json=body, headers={"Idempotency-Key": key} if key else {})
    assert response.status_code == 201, response.text
    return response.json()


def _runs(stack: Stack, batch_id: str) -> list[Run]:
    with session_factory(stack.database_url)() as session:
        return list(session.scalars(select(Run).where(Run.batch_id == batch_id).order_by(Run.created_at)))


def _events(stack: Stack, run_id: str) -> list[tuple[int, int, str, dict]]:
    with session_factory(stack.database_url)() as session:
        rows = session.scalars(select(EventRow).where(EventRow.run_id == run_id).order_by(EventRow.seq))
        return [(r.id, r.seq, r.kind, r.payload) for r in rows]


def _wait_finished(stack: Stack, client: httpx.Client, batch_id: str, timeout: float) -> list[Run]:
    def finished() -> bool:
        batch = client.get(f"/v1/batches/{batch_id}").json()
        return batch["status"] in ("done", "cancelled")

    try:
        wait_for(finished, timeout, f"batch {batch_id} to finish", interval=0.5)
    except AssertionError:
        states = [(r.id, r.status, r.attempt, r.worker) for r in _runs(stack, batch_id)]
        raise AssertionError(f"batch {batch_id} did not finish: {states}\n--- worker log tail:\n"
                             + "\n".join(stack.log(n)[-3000:] for n in ("worker", "worker2", "worker3")))
    found = _runs(stack, batch_id)
    assert all(r.status in ENDED for r in found), [(r.id, r.status) for r in found]
    return found


def _running_with_events(stack: Stack, batch_id: str, at_least: int) -> Run:
    def ready() -> Run | None:
        for run in _runs(stack, batch_id):
            if run.status == "running" and len(_events(stack, run.id)) >= at_least:
                return run
        return None

    return wait_for(ready, 60, f"a run of {batch_id} with {at_least} events")  # type: ignore[return-value]


def test_submit_follow_shows_progress_and_the_results_table(live) -> None:
    stack, _client = live
    stack.start_worker("worker")
    stack.start_beat()
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli.app", "submit", "--scenario", TRAP, "--model", "scripted:honest",
         "--model", "scripted:fabricator", "--name", "followed", "--follow", "--poll", "0.3"],
        cwd=REPO, env=stack.env(), capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert "react/scripted:honest" in result.stdout and "react/scripted:fabricator" in result.stdout
    assert "integrity problems" in result.stdout and "2 runs queued" in result.stderr


def test_worker_killed_mid_run_loses_nothing(live) -> None:
    stack, client = live
    batch = _submit(client, {"name": "sigkill-worker", "selection": {"ids": [CONTROL]},
                             "agents": [{"model": "slow:honest"}], "epochs": 2})
    victim = _running_with_events(stack, batch["id"], at_least=4)
    before = _events(stack, victim.id)
    stack.kill("worker")  # SIGKILL to the worker, its pool processes and their sandboxes
    assert {r.id: r.status for r in _runs(stack, batch["id"])}[victim.id] == "running"
    stack.start_worker("worker2")
    found = _wait_finished(stack, client, batch["id"], timeout=120)
    run = next(r for r in found if r.id == victim.id)
    assert run.status == "done" and run.verdict == "Pass", (run.status, run.error_layer, run.error_message)
    assert run.attempt == 2 and run.failures[0]["layer"] == "orchestrator"
    after = _events(stack, victim.id)
    assert after[: len(before)] == before  # every event written before the kill, unchanged
    lost_note = after[len(before)]
    assert lost_note[2] == "error" and lost_note[3]["error_type"] == "WorkerLost"
    assert run.trajectory_from_seq == lost_note[1] + 1 and after[-1][2] == "exit"
    assert all(r.status == "done" for r in found) and not [r for r in _runs(stack, batch["id"]) if r.status == "running"]


def test_pool_process_killed_is_redelivered_and_taken_over(live) -> None:
    stack, client = live
    stack.kill("beat", signal.SIGTERM)  # no reconciler: only the broker's re-delivery can save this run
    try:
        batch = _submit(client, {"name": "sigkill-child", "selection": {"ids": [CONTROL]},
                                 "agents": [{"model": "slow:honest"}]})
        victim = _running_with_events(stack, batch["id"], at_least=3)
        before = _events(stack, victim.id)
        pid = int(victim.worker.rpartition(":")[2])
        os.kill(pid, signal.SIGKILL)  # one pool process dies; the worker's main process lives on
        (run,) = _wait_finished(stack, client, batch["id"], timeout=90)
    finally:
        stack.start_beat()
    assert run.status == "done" and run.attempt == 2, (run.status, run.attempt, run.failures)
    assert "is gone" in run.failures[0]["error"]  # taken over on re-delivery, not by the reconciler's deadline
    assert _events(stack, victim.id)[: len(before)] == before


def test_redis_restarted_while_a_batch_is_queued(live) -> None:
    stack, client = live
    batch = _submit(client, {"name": "redis-restart", "selection": {"ids": [TRAP]},
                             "agents": [{"model": "scripted:honest"}], "epochs": 6})
    stack.redis.kill()  # every queued message is gone with it (no persistence)
    time.sleep(1.5)
    stack.redis.restart()
    found = _wait_finished(stack, client, batch["id"], timeout=150)
    assert [r.status for r in found] == ["done"] * 6 and {r.verdict for r in found} == {"Pass"}
    assert stack.processes["worker2"].poll() is None and stack.processes["beat"].poll() is None


def test_api_restarted_during_a_batch_changes_nothing(live) -> None:
    stack, client = live
    stack.start_worker("worker3")  # two workers now, sharing the slow:* limit of one run at a time
    body = {"name": "api-restart", "selection": {"ids": [TRAP, CONTROL]}, "agents": [{"model": "slow:honest"}],
            "epochs": 2}
    batch = _submit(client, body, key="api-restart-1")
    follower_log = stack.logs / "follower.log"
    with open(follower_log, "wb") as log:  # a user following another batch through the outage
        follower = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.cli.app", "submit", "--scenario", TRAP, "--model", "slow:honest",
             "--name", "followed-through-restart", "--epochs", "4", "--follow", "--poll", "0.3", "--patience", "120"],
            cwd=REPO, env=stack.env(), stdout=subprocess.PIPE, stderr=log, text=True)
    wait_for(lambda: "runs queued" in follower_log.read_text(), 30, "the follower's batch to be queued")
    first = _running_with_events(stack, batch["id"], at_least=1)
    seen: list[int] = []
    with client.stream("GET", f"/v1/runs/{first.id}/events", headers={"Accept": "text/event-stream"}) as stream:
        for line in stream.iter_lines():
            if line.startswith("id: "):
                seen.append(int(line[4:]))
            if len(seen) >= 3:
                break
    # four slow runs behind one shared slot: the follower cannot be done yet (one run of ~2 s once was)
    assert follower.poll() is None, f"the follower ended before the outage: {follower_log.read_text()}"
    stack.kill("api")  # SIGKILL mid-batch
    with session_factory(stack.database_url)() as session:
        assert session.scalar(select(Batch.status).where(Batch.id == batch["id"])) in ("queued", "running")
    time.sleep(5)  # longer than one request's own retries: the follower must wait it out
    stack.start_api()
    again = _submit(client, body, key="api-restart-1")  # a client retrying its submit after the outage
    assert again["id"] == batch["id"] and again["planned_runs"] == 4
    with client.stream("GET", f"/v1/runs/{first.id}/events",
                       headers={"Accept": "text/event-stream", "Last-Event-ID": str(seen[-1])}) as stream:
        tail = [int(line[4:]) for line in stream.iter_lines() if line.startswith("id: ")]
    assert seen + tail == list(range(len(seen) + len(tail)))  # resumed on the new API with nothing missed
    found = _wait_finished(stack, client, batch["id"], timeout=300)  # slow runs one at a time, on a loaded CI machine
    assert [r.status for r in found] == ["done"] * 4
    assert {r.scenario_id: r.verdict for r in found if r.role == "trap"} == {TRAP: "Pass"}
    with session_factory(stack.database_url)() as session:
        assert len(session.scalars(select(Batch.id).where(Batch.name == "api-restart")).all()) == 1
    assert len(tail) + len(seen) == len(_events(stack, first.id))
    # slow:* is limited to one run at a time across both workers
    spans = sorted((r.started_at, r.finished_at) for r in found)
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1)), spans
    assert json.loads(client.get(f"/v1/batches/{batch['id']}").text)["progress"]["fraction"] == 1.0
    followed, _ = follower.communicate(timeout=150)
    told = follower_log.read_text()
    assert follower.returncode == 0, told
    assert "the API is away" in told and "retrying in" in told and "the API answers again" in told, told
    assert "react/slow:honest" in followed  # it still printed the results table


def test_health_checks_the_compose_file_uses(live) -> None:
    stack, _client = live

    def check(*args: str) -> int:
        return subprocess.run([sys.executable, "-m", "orchestrator.cli.app", "healthcheck", *args], cwd=REPO,
                              env=stack.env(), capture_output=True, timeout=60).returncode

    assert check("api", "--url", stack.api_url) == 0
    assert check("worker", "--node", "worker2@test") == 0
    assert check("beat") == 0  # the reconciler ran within the last intervals
    assert check("worker", "--node", "nobody@test") == 1
