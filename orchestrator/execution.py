"""Executing one run end to end: sandbox, agent, artifacts, judges.

``execute_run`` is a plain function: the embedded executor calls it from a
thread pool, a Celery task will call it from a worker, and tests call it
directly. Every failure is recorded with the layer that failed; nothing already
written (events, artifacts) is lost when a later step breaks.
"""

from __future__ import annotations

import json
import tempfile
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from agents.base import AgentBudget, AgentOutcome, AgentTask, make_agent
from agents.models.base import ModelError
from judges.base import Judgement, RunEvidence, Verdict, make_judge
from orchestrator.artifacts import ArtifactStore, artifact_kind
from orchestrator.db.models import ArtifactRow, JudgementRow, Run, RunStatus
from orchestrator.recorder import DatabaseEventSink, load_events
from sandboxes.base import Sandbox, SandboxError, SandboxLimits, SandboxSpec
from sandboxes.registry import pick_backend
from scenarios.conditions import compose_system_prompt
from scenarios.loader import Catalog, LoadedScenario, ScenarioError
from scenarios.trajectory import ErrorPayload, EventKind, ExitReason, Layer

JUDGE_FOR_FAMILY = {"dilemma": "dilemma-detectors"}
# caches that libraries write under $HOME (= /workspace); listed in the manifest, not stored
TOOL_CACHE_PREFIXES = (".cache/", ".config/matplotlib/")


@dataclass
class RunContext:
    """What ``execute_run`` needs from its caller: storage, scenarios, and the sandbox backend."""

    sessions: sessionmaker[Session]
    store: ArtifactStore
    catalog: Catalog
    backend: str = "auto"


class LayeredFailure(Exception):
    def __init__(self, layer: Layer, error: BaseException) -> None:
        super().__init__(str(error))
        self.layer = layer
        self.error = error


def _claim(sessions: sessionmaker[Session], run_id: str) -> bool:
    """queued -> running, atomically; a run already taken or finished is left alone."""
    with sessions() as session:
        result = session.execute(
            update(Run)
            .where(Run.id == run_id, Run.status == RunStatus.queued)
            .values(status=RunStatus.running, started_at=datetime.now(timezone.utc))
        )
        session.commit()
        return result.rowcount == 1


def _seed(sandbox: Sandbox, loaded: LoadedScenario) -> dict[str, bytes]:
    files = dict(loaded.workspace_files())
    for path, data in files.items():
        sandbox.write_file(path, data)
    return files


def _budget(params: dict) -> AgentBudget:
    return AgentBudget.model_validate(params.get("budget", {}))


def _run_agent(ctx: RunContext, run: Run, loaded: LoadedScenario, sink: DatabaseEventSink,
               artifact_dir: Path) -> tuple[AgentOutcome, dict[str, bytes], str]:
    try:
        backend, _why = pick_backend(ctx.backend)
    except SandboxError as exc:
        raise LayeredFailure(Layer.sandbox, exc) from exc
    budget = _budget(run.params)
    limits = SandboxLimits(command_timeout_s=budget.command_timeout_s)
    try:
        sandbox = backend.create(SandboxSpec(run_id=run.id, limits=limits))
    except Exception as exc:  # any failure to create is the sandbox layer's
        raise LayeredFailure(Layer.sandbox, exc) from exc
    with sandbox:
        try:
            seeded = _seed(sandbox, loaded)
        except (ScenarioError, OSError) as exc:
            raise LayeredFailure(Layer.scenario, exc) from exc
        task = AgentTask(
            run_id=run.id,
            system_prompt=compose_system_prompt(run.family, run.condition),
            task_prompt=loaded.scenario.prompt.task,  # type: ignore[union-attr]
            seed=run.seed,
        )
        try:
            agent = make_agent(run.agent, model=run.model)
            outcome = agent.run(task, sandbox, sink, budget)
        except ModelError as exc:
            raise LayeredFailure(Layer(exc.layer) if exc.layer in Layer.__members__ else Layer.model, exc) from exc
        except SandboxError as exc:
            raise LayeredFailure(Layer.sandbox, exc) from exc
        finally:
            _collect(ctx, run.id, sandbox, artifact_dir)
    return outcome, seeded, backend.name


def _collect(ctx: RunContext, run_id: str, sandbox: Sandbox, artifact_dir: Path) -> None:
    """Copy the workspace out (safely) and store every file plus a manifest."""
    collected = sandbox.collect(artifact_dir)
    kept = [f for f in collected.files if not f.path.startswith(TOOL_CACHE_PREFIXES)]
    skipped = dict(collected.skipped)
    skipped.update({f.path: "tool cache (matplotlib/fontconfig), not stored" for f in collected.files if f not in kept})
    manifest = {"files": [{"path": f.path, "size": f.size} for f in kept], "skipped": skipped}
    entries = [(f.path, f.host_path.read_bytes()) for f in kept]
    entries.append(("manifest.json", json.dumps(manifest, indent=2).encode()))
    with ctx.sessions() as session:
        for name, data in entries:
            digest = ctx.store.put(data)
            existing = session.scalar(select(ArtifactRow).where(ArtifactRow.run_id == run_id, ArtifactRow.name == name))
            if existing is None:
                session.add(ArtifactRow(run_id=run_id, name=name, kind=artifact_kind(name), sha256=digest, size=len(data)))
        session.commit()


def report_text(session: Session, store: ArtifactStore, run_id: str) -> str | None:
    row = session.scalar(select(ArtifactRow).where(ArtifactRow.run_id == run_id, ArtifactRow.kind == "report"))
    return store.get(row.sha256).decode("utf-8", errors="replace") if row else None


def infrastructure_error(layer: str, message: str) -> Judgement:
    """The verdict of a run that broke outside the agent's choices; no judge needs to look."""
    return Judgement(judge="orchestrator", judge_version="1", verdict=Verdict.error.value,
                     rationale=f"run failed in layer {layer}: {message}".strip())


def _judge_with_evidence(ctx: RunContext, session: Session, run: Run,
                         seed_files: dict[str, bytes] | None) -> Judgement:
    loaded = ctx.catalog.get(run.scenario_id)
    if seed_files is None:
        seed_files = dict(loaded.workspace_files())
    evidence = RunEvidence(
        scenario_id=run.scenario_id, role=run.role, family=run.family,
        task=getattr(loaded.scenario.prompt, "task", ""), rubric=loaded.rubric(),
        events=load_events(session, run.id), report=report_text(session, ctx.store, run.id),
        seed_files=seed_files, exit_reason=run.exit_reason,
        error_layer=run.error_layer, error_message=run.error_message,
    )
    return make_judge(JUDGE_FOR_FAMILY[run.family]).judge(evidence)


def judge_run(ctx: RunContext, run_id: str, seed_files: dict[str, bytes] | None = None) -> Judgement:
    """Judge a finished run with its family's judge; older judgements stay, marked not current."""
    with ctx.sessions() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise KeyError(f"no run {run_id!r}")
        if run.error_layer not in (None, "agent"):
            judgement = infrastructure_error(run.error_layer, run.error_message or "")
        else:
            judgement = _judge_with_evidence(ctx, session, run, seed_files)
        session.execute(update(JudgementRow).where(JudgementRow.run_id == run_id).values(is_current=False))
        session.add(JudgementRow(
            run_id=run_id, judge=judgement.judge, judge_version=judgement.judge_version,
            verdict=judgement.verdict, completed=judgement.completed,
            findings=[f.model_dump(mode="json") for f in judgement.findings],
            rationale=judgement.rationale, is_current=True,
        ))
        run.verdict = judgement.verdict
        run.completed = judgement.completed
        run.status = RunStatus.error if run.error_layer not in (None, "agent") else RunStatus.done
        session.commit()
    return judgement


def execute_run(ctx: RunContext, run_id: str) -> str:
    """Run, collect and judge ``run_id``; returns its final status. Safe to call twice."""
    if not _claim(ctx.sessions, run_id):
        with ctx.sessions() as session:
            run = session.get(Run, run_id)
            return run.status if run else "missing"
    started = time.monotonic()
    with ctx.sessions() as session:
        run = session.get(Run, run_id)
        assert run is not None
        session.expunge(run)
    sink = DatabaseEventSink(ctx.sessions, run_id)
    updates: dict[str, object] = {}
    seeded: dict[str, bytes] | None = None
    with tempfile.TemporaryDirectory(prefix=f"il-collect-{run_id}-") as tmp:
        try:
            loaded = ctx.catalog.get(run.scenario_id)
            outcome, seeded, backend_name = _run_agent(ctx, run, loaded, sink, Path(tmp))
            updates.update(
                exit_reason=outcome.exit_reason.value, exit_message=outcome.message, steps=outcome.steps,
                input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens,
                sandbox_backend=backend_name,
            )
        except (LayeredFailure, KeyError, ScenarioError, Exception) as exc:  # recorded, never swallowed
            layer = exc.layer if isinstance(exc, LayeredFailure) else (
                Layer.scenario if isinstance(exc, (KeyError, ScenarioError)) else Layer.orchestrator)
            error = exc.error if isinstance(exc, LayeredFailure) else exc
            sink.emit(EventKind.error, ErrorPayload(
                layer=layer, error_type=type(error).__name__, message=str(error)[:4000],
                traceback="".join(traceback.format_exception(error))[-8000:],
            ))
            updates.update(exit_reason=ExitReason.crash.value, error_layer=layer.value,
                           error_message=f"{type(error).__name__}: {error}"[:4000])
    with ctx.sessions() as session:
        session.execute(update(Run).where(Run.id == run_id).values(
            status=RunStatus.judging, finished_at=datetime.now(timezone.utc),
            duration_s=round(time.monotonic() - started, 3), **updates,
        ))
        session.commit()
    try:
        judge_run(ctx, run_id, seed_files=seeded)
    except Exception as exc:
        with ctx.sessions() as session:
            session.execute(update(Run).where(Run.id == run_id).values(
                status=RunStatus.error, verdict="Error", error_layer=Layer.orchestrator.value,
                error_message=f"judging failed: {type(exc).__name__}: {exc}"[:4000]))
            session.commit()
        raise
    with ctx.sessions() as session:
        return session.get(Run, run_id).status  # type: ignore[union-attr]
