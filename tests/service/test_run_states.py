"""The run state machine and the worker's plain functions, in-process (SQLite, real bubblewrap runs).

Races are real threads; the reconciler gets a stand-in broker view so each case
says exactly what Redis holds.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

import tests.service.slow_provider as test_providers
from orchestrator import reconciler, runs, worker
from orchestrator.artifacts import ArtifactStore
from orchestrator.batches import AgentSpec, BatchSpec, RunBudget, Selection, plan_batch
from orchestrator.db.models import ArtifactRow, Batch, EventRow, Run, RunStatus
from orchestrator.db.session import session_factory
from orchestrator.execution import RunContext
from orchestrator.recorder import DatabaseEventSink, load_events
from orchestrator.settings import Settings
from scenarios.loader import load_catalog
from scenarios.trajectory import EventKind, MessagePayload
from tests.conftest import requires_bwrap
from tests.service.conftest import TEST_PACK, TRAP

S = RunStatus


@pytest.fixture
def wctx(tmp_path: Path) -> worker.WorkerContext:
    settings = Settings(data_dir=tmp_path, packs=[TEST_PACK], sandbox_backend="bwrap", heartbeat_s=0.2,
                        stale_after_s=2, max_attempts=3, retry_backoff_s=0.1, requeue_grace_s=0)
    ctx = RunContext(sessions=session_factory(f"sqlite:///{tmp_path / 'il.db'}"), store=ArtifactStore(tmp_path / "a"),
                     catalog=load_catalog([TEST_PACK]), backend="bwrap")
    judged: list[str] = []
    context = worker.WorkerContext(run=ctx, settings=settings, enqueue_judge=judged.append)
    context.judged = judged  # type: ignore[attr-defined]
    return context


def _plan(wctx: worker.WorkerContext, model: str = "scripted:honest", **spec: object) -> list[str]:
    batch_id, _ = plan_batch(wctx.run.sessions, wctx.run.catalog,
                             BatchSpec(selection=Selection(ids=[TRAP]), agents=[AgentSpec(model=model)], **spec))
    with wctx.run.sessions() as session:
        return list(session.scalars(select(Run.id).where(Run.batch_id == batch_id)))


def _run(wctx: worker.WorkerContext, run_id: str) -> Run:
    with wctx.run.sessions() as session:
        return session.get(Run, run_id)  # type: ignore[return-value]


def test_transitions_outside_the_table_are_refused(wctx) -> None:
    (run_id,) = _plan(wctx)
    with wctx.run.sessions() as session:
        with pytest.raises(runs.IllegalTransition):
            runs.transition(session, run_id, S.queued, S.done)
        with pytest.raises(runs.IllegalTransition):
            runs.transition(session, run_id, S.cancelled, S.queued)
        # legal, but the run is not where the caller expects: nothing happens
        assert runs.transition(session, run_id, S.running, S.judging) is False
        session.commit()
    assert _run(wctx, run_id).status == S.queued


def test_only_one_of_many_racing_claims_wins(wctx) -> None:
    (run_id,) = _plan(wctx)
    results: list[int | None] = []
    barrier = threading.Barrier(8)

    def claim() -> None:
        barrier.wait()
        results.append(runs.claim(wctx.run.sessions, run_id, f"w{threading.get_ident()}", 5))

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r for r in results if r is not None) == [1] and results.count(None) == 7
    assert _run(wctx, run_id).status == S.running


def test_a_taken_over_attempt_is_fenced_off(wctx) -> None:
    (run_id,) = _plan(wctx)
    assert runs.claim(wctx.run.sessions, run_id, "old:1", 5) == 1
    DatabaseEventSink(wctx.run.sessions, run_id).emit(EventKind.message, MessagePayload(role="assistant", text="a"))
    assert runs.take_over(wctx.run.sessions, run_id, 1, "new:2", 5, "holder gone") == 2
    assert runs.take_over(wctx.run.sessions, run_id, 1, "third:3", 5, "holder gone") is None  # lost the race
    assert runs.heartbeat(wctx.run.sessions, run_id, 1, 5) is False  # the old holder learns it lost the run
    assert runs.heartbeat(wctx.run.sessions, run_id, 2, 5) is True
    run = _run(wctx, run_id)
    assert run.attempt == 2 and run.worker == "new:2" and run.trajectory_from_seq == 2
    with wctx.run.sessions() as session:
        events = load_events(session, run_id)
    assert [e.kind for e in events] == ["message", "error"] and events[1].payload["layer"] == "orchestrator"
    assert run.failures and run.failures[0]["layer"] == "orchestrator"


@requires_bwrap
def test_a_redelivered_run_is_not_run_again(wctx) -> None:
    (run_id,) = _plan(wctx)
    assert worker.attempt_run(wctx, run_id).status == "judging"
    assert worker.judge_attempt(wctx, run_id, final=False).status == "done"
    with wctx.run.sessions() as session:
        before = len(load_events(session, run_id))
    for _ in range(2):  # duplicate deliveries of both tasks
        assert worker.attempt_run(wctx, run_id).status == "skipped"
        assert worker.judge_attempt(wctx, run_id, final=False).status == "done"
    with wctx.run.sessions() as session:
        assert len(load_events(session, run_id)) == before
        assert session.get(Batch, _run(wctx, run_id).batch_id).status == "done"
    assert wctx.judged == [run_id]  # type: ignore[attr-defined]


@requires_bwrap
def test_infra_failure_is_retried_and_recorded_by_layer(wctx) -> None:
    test_providers.FLAKY_FAILURES.clear()
    (run_id,) = _plan(wctx, model="flaky:honest")
    first = worker.attempt_run(wctx, run_id)
    assert first.status == "retry" and first.retry_in is not None and 0 < first.retry_in < 1
    run = _run(wctx, run_id)
    assert run.status == S.queued and run.attempt == 1 and run.error_layer is None
    assert [(f["attempt"], f["layer"], f["retried"]) for f in run.failures] == [(1, "model", True)]
    assert "503" in run.failures[0]["error"]
    with wctx.run.sessions() as session:  # the failed attempt's workspace is kept aside, not replaced
        names = set(session.scalars(select(ArtifactRow.name).where(ArtifactRow.run_id == run_id)))
    assert "attempt-1/manifest.json" in names
    assert worker.attempt_run(wctx, run_id).status == "judging"
    assert worker.judge_attempt(wctx, run_id, final=False).status == "done"
    run = _run(wctx, run_id)
    assert run.verdict == "Pass" and run.attempt == 2 and run.trajectory_from_seq > 0
    with wctx.run.sessions() as session:
        kinds = [e.kind for e in load_events(session, run_id)]
    assert kinds[run.trajectory_from_seq - 1] == "error" and kinds[-1] == "exit"


@requires_bwrap
def test_agent_behaviour_and_permanent_errors_are_never_retried(wctx) -> None:
    (limited,) = _plan(wctx, budget=RunBudget(max_steps=1))
    assert worker.attempt_run(wctx, limited).status == "judging"
    assert _run(wctx, limited).exit_reason == "step_limit"
    (tokens,) = _plan(wctx, budget=RunBudget(max_tokens=50))
    assert worker.attempt_run(wctx, tokens).status == "judging"
    run = _run(wctx, tokens)
    assert run.exit_reason == "step_limit" and "token budget of 50" in run.exit_message and run.failures == []
    (broken,) = _plan(wctx, model="broken:honest")
    assert worker.attempt_run(wctx, broken).status == "judging"
    assert worker.judge_attempt(wctx, broken, final=False).status == "error"
    run = _run(wctx, broken)
    assert run.error_layer == "model" and run.attempt == 1 and run.verdict == "Error"


@requires_bwrap
def test_a_cancelled_run_stops_at_its_next_event(wctx, monkeypatch) -> None:
    (run_id,) = _plan(wctx, model="slow:honest")
    monkeypatch.setenv("INTEGRITYLAB_TEST_SLOW_S", "0.3")
    result: list[worker.Outcome] = []
    thread = threading.Thread(target=lambda: result.append(worker.attempt_run(wctx, run_id)))
    thread.start()
    from tests.service.conftest import wait_for

    wait_for(lambda: _run(wctx, run_id).status == S.running, 20, "the run to start")
    with wctx.run.sessions() as session:
        assert runs.cancel_batch(session, _run(wctx, run_id).batch_id) == 1
        session.commit()
    thread.join(30)
    assert result and result[0].status == "stopped"
    run = _run(wctx, run_id)
    assert run.status == S.cancelled and run.verdict is None
    with wctx.run.sessions() as session:
        assert not any(e.kind == "exit" for e in load_events(session, run_id))


class FakeBroker:
    def __init__(self, pending: dict[str, set[str]]) -> None:
        self._pending = pending

    def pending(self, unacked_max_age_s: float | None = None) -> dict[str, set[str]]:
        return self._pending


def test_reconciler_requeues_dead_runs_and_resends_lost_messages(wctx) -> None:
    ids = _plan(wctx, epochs=5)
    dead, gone, in_redis, judging_lost, hopeless = ids
    sessions = wctx.run.sessions
    for run_id in (dead, hopeless):
        runs.claim(sessions, run_id, "elsewhere:1", 5)
    with sessions() as session:  # two workers stopped heartbeating long ago; one of them at its last attempt
        session.execute(update(Run).where(Run.id.in_([dead, hopeless]))
                        .values(deadline_at=runs.utcnow() - timedelta(seconds=60)))
        session.execute(update(Run).where(Run.id == hopeless).values(attempt=3))
        session.execute(update(Run).where(Run.id == judging_lost).values(status=S.judging))
        session.commit()
    sent: dict[str, list[str]] = {"runs": [], "judges": []}
    publish = reconciler.Publisher(runs=sent["runs"].extend, judges=sent["judges"].extend)
    broker = FakeBroker({"run": {in_redis}, "judge": set()})
    report = reconciler.reconcile(sessions, wctx.settings, publish, broker, "run", "judge")  # type: ignore[arg-type]
    assert report.requeued == [dead] and report.gave_up == [hopeless]
    assert report.reenqueued == [gone] and report.rejudged == [judging_lost]
    assert sorted(sent["runs"]) == sorted([dead, gone]) and sorted(sent["judges"]) == sorted([hopeless, judging_lost])
    assert _run(wctx, dead).status == S.queued and _run(wctx, hopeless).status == S.judging
    assert _run(wctx, hopeless).error_layer == "orchestrator"
    with sessions() as session:
        notes = session.scalars(select(EventRow).where(EventRow.run_id == dead)).all()
    assert [n.payload["error_type"] for n in notes] == ["WorkerLost"]


def _claimed_with_recorded_exit(wctx: worker.WorkerContext, holder: str) -> str:
    """A run whose attempt reached its exit event, then lost its holder before the bookkeeping after it."""
    from orchestrator.recorder import DatabaseEventSink
    from scenarios.trajectory import ExitPayload, ExitReason, ModelCallPayload

    (run_id,) = _plan(wctx)
    sessions = wctx.run.sessions
    assert runs.claim(sessions, run_id, holder, 5) == 1
    sink = DatabaseEventSink(sessions, run_id)
    sink.emit(EventKind.model_call, ModelCallPayload(provider="scripted", model="honest", request={}, response={},
                                                     input_tokens=120, output_tokens=30))
    sink.emit(EventKind.exit, ExitPayload(reason=ExitReason.quit, message="the windows do not overlap"))
    with sessions() as session:
        session.execute(update(Run).where(Run.id == run_id).values(deadline_at=runs.utcnow() - timedelta(seconds=60)))
        session.commit()
    return run_id


def test_a_run_whose_exit_is_on_record_is_finished_never_run_again_by_the_reconciler(wctx) -> None:
    run_id = _claimed_with_recorded_exit(wctx, "elsewhere:1")
    sent: dict[str, list[str]] = {"runs": [], "judges": []}
    publish = reconciler.Publisher(runs=sent["runs"].extend, judges=sent["judges"].extend)
    report = reconciler.reconcile(wctx.run.sessions, wctx.settings, publish, None, "run", "judge")
    assert report.finished_from_record == [run_id] and report.requeued == []
    assert sent == {"runs": [], "judges": [run_id]}
    run = _run(wctx, run_id)
    assert run.status == S.judging and run.attempt == 1 and run.exit_reason == "quit"
    assert (run.steps, run.input_tokens, run.output_tokens) == (1, 120, 30)
    assert "not run again" in run.failures[-1]["error"]


def test_a_run_whose_exit_is_on_record_is_judged_not_taken_over_by_a_worker(wctx) -> None:
    host = __import__("socket").gethostname()
    run_id = _claimed_with_recorded_exit(wctx, f"{host}:{2**22 + 12345}")  # a pid that does not exist here
    outcome = worker.attempt_run(wctx, run_id)
    assert outcome.status == "judging" and "recorded exit" in outcome.detail
    assert wctx.judged == [run_id]  # type: ignore[attr-defined]
    assert _run(wctx, run_id).attempt == 1 and _run(wctx, run_id).status == S.judging
