"""Executing one run end to end: sandbox, agent, artifacts, judges.

``execute_run`` is a plain function: the embedded executor calls it from a
thread pool and tests call it directly. The service runs the same steps split in
two (``run_agent_phase`` + ``end_agent_phase`` on the ``runs`` queue,
``judge_run`` on the ``judges`` queue; see ``orchestrator/worker.py``). Every
failure is recorded with the layer that failed; nothing already written
(events, artifacts) is lost when a later step breaks. Status changes go through
the guarded transitions of ``orchestrator/runs.py``.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from agents.base import Agent, AgentFailure, AgentOutcome, AgentTask, make_agent
from agents.models.base import ModelError
from judges.base import Judgement, RunEvidence, Verdict, make_judge
from orchestrator import runs
from orchestrator.artifacts import ArtifactStore, artifact_kind
from orchestrator.batches import RunBudget
from orchestrator.db.models import ArtifactRow, JudgementRow, Run, RunStatus
from orchestrator.interrupts import Interrupt, InterruptingSink, RunInterrupted, embedded_worker, mark_interrupted
from orchestrator.recorder import DatabaseEventSink, load_events
from annotation.routing import review_reasons
from orchestrator.annotation_store import route_for_review
from sandboxes.base import Sandbox, SandboxBackend, SandboxError, SandboxLimits, SandboxSpec, SandboxUnavailable
from sandboxes.fingerprint import run_environment
from sandboxes.latex import compile_and_extract
from sandboxes.registry import pick_backend
from scenarios.conditions import compose_system_prompt
from scenarios.loader import Catalog, LoadedScenario, ScenarioError
from scenarios.render import extra_workspace_files, task_prompt
from scenarios.rubric import Rubric
from scenarios.trajectory import (
    ErrorPayload, EventKind, EventSink, ExitPayload, ExitReason, Layer, Payload, TrajectoryEvent,
)

JUDGE_FOR_FAMILY = {"dilemma": "dilemma-detectors", "probe": "probe-scorer", "mcq": "mcq-scorer"}
# caches that libraries write under $HOME (= /workspace); listed in the manifest, not stored
TOOL_CACHE_PREFIXES = (".cache/", ".config/matplotlib/")


@dataclass
class RunContext:
    """What ``execute_run`` needs from its caller: storage, scenarios, and the sandbox backend."""

    sessions: sessionmaker[Session]
    store: ArtifactStore
    catalog: Catalog
    backend: str = "auto"
    judge_panel: list[str] = field(default_factory=list)  # model specs; empty = no LLM panel
    audit_rate: float = 0.0
    review_confidence: float = 0.67


class LayeredFailure(Exception):
    def __init__(self, layer: Layer, error: BaseException) -> None:
        super().__init__(str(error))
        self.layer = layer
        self.error = error


class TokenBudgetExhausted(Exception):
    """The agent's model calls used up the run's token budget (agent behaviour: ends the run, never retried)."""


class BudgetedSink:
    """Passes events through; after a model call that takes the run past ``max_tokens``, stops the agent."""

    def __init__(self, inner: EventSink, max_tokens: int | None) -> None:
        self.inner = inner
        self.max_tokens = max_tokens
        self.input_tokens = 0
        self.output_tokens = 0
        self.model_calls = 0

    def emit(self, kind: EventKind, payload: Payload, step: int | None = None) -> TrajectoryEvent:
        event = self.inner.emit(kind, payload, step)
        if kind == EventKind.model_call:
            self.model_calls += 1
            self.input_tokens += event.payload.get("input_tokens", 0) or 0
            self.output_tokens += event.payload.get("output_tokens", 0) or 0
            if self.max_tokens is not None and self.input_tokens + self.output_tokens > self.max_tokens:
                raise TokenBudgetExhausted(
                    f"token budget of {self.max_tokens} exhausted ({self.input_tokens + self.output_tokens} used)")
        return event


def _seed(sandbox: Sandbox, loaded: LoadedScenario) -> dict[str, bytes]:
    files = dict(loaded.workspace_files())
    for path, data in files.items():
        sandbox.write_file(path, data)
    return files


def _budget(params: dict) -> RunBudget:
    return RunBudget.model_validate(params.get("budget", {}))


def _task(run: Run, loaded: LoadedScenario, agentic: bool, variant: str | None = None) -> AgentTask:
    """The prompts: a sandboxed agent gets the workspace prompt (a probe becomes paper.md + requests)."""
    prompt_family = "dilemma" if agentic else run.family
    return AgentTask(
        run_id=run.id,
        system_prompt=compose_system_prompt(prompt_family, run.condition, variant),
        task_prompt=task_prompt(loaded.scenario, agentic=agentic),
        seed=run.seed,
    )


def _drive(agent: Agent, task: AgentTask, sandbox: Sandbox | None, sink: EventSink, budget: RunBudget) -> AgentOutcome:
    """Run the agent under the token budget; map failures to the layer that broke."""
    budgeted = BudgetedSink(sink, budget.max_tokens)
    try:
        return agent.run(task, sandbox, budgeted, budget)  # type: ignore[arg-type]
    except TokenBudgetExhausted as exc:
        outcome = AgentOutcome(exit_reason=ExitReason.step_limit, message=str(exc), steps=budgeted.model_calls,
                               input_tokens=budgeted.input_tokens, output_tokens=budgeted.output_tokens)
        sink.emit(EventKind.exit, ExitPayload(reason=outcome.exit_reason, message=outcome.message), step=outcome.steps)
        return outcome
    except ModelError as exc:
        raise LayeredFailure(Layer(exc.layer) if exc.layer in Layer.__members__ else Layer.model, exc) from exc
    except AgentFailure as exc:
        raise LayeredFailure(Layer.agent, exc) from exc
    except SandboxError as exc:
        raise LayeredFailure(Layer.sandbox, exc) from exc


def _run_agent(ctx: RunContext, run: Run, loaded: LoadedScenario, sink: EventSink,
               artifact_dir: Path) -> tuple[AgentOutcome, dict[str, bytes], str]:
    budget = _budget(run.params)
    agent = make_agent(run.agent, model=run.model, **run.params.get("agent_parameters", {}))
    if not agent.needs_sandbox:  # single-shot: one model call, nothing to execute
        return _drive(agent, _task(run, loaded, agentic=False), None, sink, budget), {}, "none"
    try:
        backend, _why = pick_backend(ctx.backend)
    except SandboxError as exc:
        raise LayeredFailure(Layer.sandbox, exc) from exc
    if agent.sandbox_image and not backend.runs_images:
        raise LayeredFailure(Layer.sandbox, SandboxUnavailable(
            f"agent {run.agent!r} runs in the {agent.sandbox_image} image, which the {backend.name!r} sandbox "
            "backend cannot run: use the docker backend"))
    try:
        return _run_in_sandbox(ctx, run, loaded, sink, artifact_dir, agent, backend, budget)
    finally:
        agent.close_gateway()


def _run_in_sandbox(ctx: RunContext, run: Run, loaded: LoadedScenario, sink: EventSink, artifact_dir: Path,
                    agent: Agent, backend: SandboxBackend,
                    budget: RunBudget) -> tuple[AgentOutcome, dict[str, bytes], str]:
    try:
        gateway = agent.open_gateway(sink, budget)
    except Exception as exc:  # the run's own gateway could not start
        raise LayeredFailure(Layer.gateway, exc) from exc
    limits = SandboxLimits(**{**agent.sandbox_limits, "command_timeout_s": budget.command_timeout_s})
    spec = SandboxSpec(run_id=run.id, limits=limits, image=agent.sandbox_image,
                       gateway_socket=gateway.socket_path if gateway is not None else None)
    try:
        sandbox = backend.create(spec)
    except Exception as exc:  # any failure to create is the sandbox layer's
        raise LayeredFailure(Layer.sandbox, exc) from exc
    with sandbox:
        _record_environment(ctx, run.id, sandbox)
        try:
            seeded = _seed(sandbox, loaded)
            for path, data in extra_workspace_files(loaded.scenario, agentic=True).items():
                sandbox.write_file(path, data)
        except (ScenarioError, OSError) as exc:
            raise LayeredFailure(Layer.scenario, exc) from exc
        stopped = False
        try:
            outcome = _drive(agent, _task(run, loaded, agentic=True, variant=agent.prompt_variant),
                             sandbox, sink, budget)
        except runs.RunStopped:
            stopped = True
            raise
        finally:
            if not stopped:  # a run that is no longer ours leaves the artifacts to its new holder
                _compile_latex(ctx, run.id, sandbox)
                _collect(ctx, run.id, sandbox, artifact_dir, agent.run_artifacts())
    return outcome, seeded, backend.name


def _record_environment(ctx: RunContext, run_id: str, sandbox: Sandbox) -> None:
    """The backend and the environment's fingerprint on the run, before the agent starts (a crashed run keeps
    them too)."""
    environment = run_environment(sandbox)
    with ctx.sessions() as session:
        session.execute(update(Run).where(Run.id == run_id).values(environment=environment,
                                                                   sandbox_backend=sandbox.backend))
        session.commit()


def _compile_latex(ctx: RunContext, run_id: str, sandbox: Sandbox) -> None:
    """Compile every *.tex in the workspace (in the sandbox) and keep the statuses and texts for the judges."""
    try:
        results = compile_and_extract(sandbox)
    except SandboxError as exc:
        results = [{"status": "failed", "error": f"LaTeX step failed in the sandbox layer: {exc}"}]
    if not results:
        return
    data = json.dumps([r if isinstance(r, dict) else dataclasses.asdict(r) for r in results], indent=2).encode()
    with ctx.sessions() as session:
        digest = ctx.store.put(data)
        session.add(ArtifactRow(run_id=run_id, name="latex.json", kind="latex", sha256=digest, size=len(data)))
        session.commit()


def _collect(ctx: RunContext, run_id: str, sandbox: Sandbox, artifact_dir: Path,
             agent_files: dict[str, bytes] | None = None) -> None:
    """Copy the workspace out (safely) and store every file plus a manifest, and the agent's own files."""
    collected = sandbox.collect(artifact_dir)
    kept = [f for f in collected.files if not f.path.startswith(TOOL_CACHE_PREFIXES)]
    skipped = dict(collected.skipped)
    skipped.update({f.path: "tool cache (matplotlib/fontconfig), not stored" for f in collected.files if f not in kept})
    manifest = {"files": [{"path": f.path, "size": f.size} for f in kept], "skipped": skipped}
    entries = [(f.path, f.host_path.read_bytes()) for f in kept]
    entries.append(("manifest.json", json.dumps(manifest, indent=2).encode()))
    entries.extend(sorted((agent_files or {}).items()))  # named agent/... (no workspace path starts so)
    with ctx.sessions() as session:
        stored = {row.name: row for row in session.scalars(select(ArtifactRow).where(ArtifactRow.run_id == run_id))}
        for name, data in entries:
            digest = ctx.store.put(data)
            existing = stored.get(name)
            if existing is None:
                session.add(ArtifactRow(run_id=run_id, name=name, kind=artifact_kind(name), sha256=digest, size=len(data)))
            else:  # collected again (a later attempt): the newest content is the run's
                existing.kind, existing.sha256, existing.size = artifact_kind(name), digest, len(data)
        session.commit()


def report_text(session: Session, store: ArtifactStore, run_id: str) -> str | None:
    row = session.scalar(select(ArtifactRow).where(ArtifactRow.run_id == run_id, ArtifactRow.kind == "report"))
    return store.get(row.sha256).decode("utf-8", errors="replace") if row else None


def infrastructure_error(layer: str, message: str) -> Judgement:
    """The verdict of a run that broke outside the agent's choices; no judge needs to look."""
    return Judgement(judge="orchestrator", judge_version="1", verdict=Verdict.error.value,
                     rationale=f"run failed in layer {layer}: {message}".strip())


_RUBRICS: dict[tuple[str, int, int], Rubric] = {}


def _rubric(loaded: LoadedScenario) -> Rubric:
    """The scenario's rubric, parsed once per version of its file (judging thousands of runs re-reads nothing)."""
    try:
        stat = (loaded.directory / "rubric.yaml").stat()
    except OSError:
        return loaded.rubric()  # raises the located problem
    key = (str(loaded.directory), stat.st_mtime_ns, stat.st_size)
    rubric = _RUBRICS.get(key)
    if rubric is None:
        if len(_RUBRICS) > 1024:
            _RUBRICS.clear()
        rubric = _RUBRICS[key] = loaded.rubric()
    return rubric


def _judge_with_evidence(ctx: RunContext, session: Session, run: Run,
                         seed_files: dict[str, bytes] | None) -> Judgement:
    loaded = ctx.catalog.get(run.scenario_id)
    if seed_files is None:
        seed_files = dict(loaded.workspace_files())
    evidence = RunEvidence(
        scenario_id=run.scenario_id, role=run.role, family=run.family,
        task=task_prompt(loaded.scenario), rubric=_rubric(loaded),
        events=[e for e in load_events(session, run.id) if e.seq >= (run.trajectory_from_seq or 0)],
        report=report_text(session, ctx.store, run.id),
        seed_files=seed_files, exit_reason=run.exit_reason,
        error_layer=run.error_layer, error_message=run.error_message,
        extra={"condition": run.condition},
    )
    return make_judge(JUDGE_FOR_FAMILY[run.family]).judge(evidence)


def judged_despite_failure(run: Run) -> bool:
    """A probe whose model never answered is still scored: TRACES counts it as a refusal (flagged)."""
    return run.family == "probe" and run.error_layer in ("model", "gateway")


def infrastructure_failed(run: Run) -> bool:
    return run.error_layer not in (None, "agent") and not judged_despite_failure(run)


def _second_opinions(ctx: RunContext, session: Session, run: Run,
                     seed_files: dict[str, bytes] | None) -> list[Judgement]:
    """The LLM rubric panel's judgement of a dilemma run, when a panel is configured."""
    if not ctx.judge_panel or run.family != "dilemma":
        return []
    from orchestrator.judging import rubric_panel  # model clients load only when a panel is configured

    loaded = ctx.catalog.get(run.scenario_id)
    evidence = RunEvidence(
        scenario_id=run.scenario_id, role=run.role, family=run.family, task=task_prompt(loaded.scenario),
        rubric=_rubric(loaded), events=[e for e in load_events(session, run.id) if e.seq >= (run.trajectory_from_seq or 0)],
        report=report_text(session, ctx.store, run.id), seed_files=seed_files or dict(loaded.workspace_files()),
        exit_reason=run.exit_reason, error_layer=run.error_layer, error_message=run.error_message,
    )
    return [rubric_panel(ctx.judge_panel).judge(evidence)]


def judge_run(ctx: RunContext, run_id: str, seed_files: dict[str, bytes] | None = None) -> Judgement | None:
    """Judge a run in ``judging`` with its family's judge; older judgements stay, marked not current.

    Returns None (and writes nothing) when the run is not in ``judging`` any more,
    e.g. a re-delivered judge task for a run another worker already judged.
    """
    with ctx.sessions() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise KeyError(f"no run {run_id!r}")
        if run.status != RunStatus.judging:
            return None
        if infrastructure_failed(run):
            judgement, others, reasons = infrastructure_error(run.error_layer or "", run.error_message or ""), [], []
        else:
            judgement = _judge_with_evidence(ctx, session, run, seed_files)
            others = _second_opinions(ctx, session, run, seed_files)
            reasons = review_reasons(judgement, others, run_id, ctx.audit_rate, ctx.review_confidence)
            if reasons:
                judgement.details["review_reasons"] = reasons
        session.execute(update(JudgementRow).where(JudgementRow.run_id == run_id).values(is_current=False))
        for made in (judgement, *others):
            session.add(JudgementRow(
                run_id=run_id, judge=made.judge, judge_version=made.judge_version,
                verdict=made.verdict, completed=made.completed,
                findings=[f.model_dump(mode="json") for f in made.findings],
                rationale=made.rationale, is_current=True, confidence=made.confidence, details=made.details,
            ))
        target = RunStatus.error if infrastructure_failed(run) else RunStatus.done
        if target == RunStatus.done and (reasons or getattr(judgement, "needs_review", False)):
            target = RunStatus.awaiting_review
        recognised = judgement.details.get("pathology_recognised")
        if not runs.transition(session, run_id, RunStatus.judging, target,
                               verdict=judgement.verdict, completed=judgement.completed,
                               pathology_recognised=recognised if isinstance(recognised, bool) else None):
            session.rollback()  # judged meanwhile by another worker: keep theirs
            return None
        if target == RunStatus.awaiting_review:
            route_for_review(session, run_id)
        session.commit()
    return judgement


def recorded_usage(ctx: RunContext, run_id: str) -> dict[str, int]:
    """Model calls and tokens from the run's recorded ``model_call`` events.

    A run that crashes never returns an outcome, but whatever its model calls
    cost is on record (the ReAct loop's and a CLI gateway's alike): count it
    there, so a crashed run does not show zero tokens.
    """
    with ctx.sessions() as session:
        calls = [e for e in load_events(session, run_id) if e.kind == EventKind.model_call]
    return {"steps": len(calls),
            "input_tokens": sum(int(e.payload.get("input_tokens") or 0) for e in calls),
            "output_tokens": sum(int(e.payload.get("output_tokens") or 0) for e in calls)}


@dataclass
class AgentPhase:
    """What the agent phase of one attempt produced; ``failure`` is set when infrastructure broke."""

    updates: dict[str, object]
    seeded: dict[str, bytes] | None
    failure: LayeredFailure | None
    started: float


def run_agent_phase(ctx: RunContext, run_id: str, wrap_sink=None) -> AgentPhase:  # noqa: ANN001
    """Sandbox, agent, artifacts for a run this caller has claimed. Failures are recorded, not raised.

    ``wrap_sink`` may wrap the event sink (the service stops a cancelled run at its
    next event this way); :class:`orchestrator.runs.RunStopped` raised from it
    propagates, with nothing more written.
    """
    started = time.monotonic()
    with ctx.sessions() as session:
        run = session.get(Run, run_id)
        assert run is not None
        session.expunge(run)
    sink: EventSink = DatabaseEventSink(ctx.sessions, run_id)
    if wrap_sink is not None:
        sink = wrap_sink(sink)
    updates: dict[str, object] = {}
    seeded: dict[str, bytes] | None = None
    failure: LayeredFailure | None = None
    with tempfile.TemporaryDirectory(prefix=f"il-collect-{run_id}-") as tmp:
        try:
            loaded = ctx.catalog.get(run.scenario_id)
            outcome, seeded, backend_name = _run_agent(ctx, run, loaded, sink, Path(tmp))
            updates.update(
                exit_reason=outcome.exit_reason.value, exit_message=outcome.message, steps=outcome.steps,
                input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens,
                sandbox_backend=backend_name,
            )
        except runs.RunStopped:
            raise
        except (LayeredFailure, KeyError, ScenarioError, Exception) as exc:  # recorded, never swallowed
            layer = exc.layer if isinstance(exc, LayeredFailure) else (
                Layer.scenario if isinstance(exc, (KeyError, ScenarioError)) else Layer.orchestrator)
            error = exc.error if isinstance(exc, LayeredFailure) else exc
            failure = exc if isinstance(exc, LayeredFailure) else LayeredFailure(layer, exc)
            sink.emit(EventKind.error, ErrorPayload(
                layer=layer, error_type=type(error).__name__, message=str(error)[:4000],
                traceback="".join(traceback.format_exception(error))[-8000:],
            ))
            updates.update(exit_reason=ExitReason.crash.value, error_layer=layer.value,
                           error_message=f"{type(error).__name__}: {error}"[:4000])
            try:
                updates.update(recorded_usage(ctx, run_id))
            except SQLAlchemyError as usage_exc:  # the failure above is what matters; say why the cost is missing
                updates["error_message"] = f"{updates['error_message']} (usage not counted: {usage_exc})"[:4000]
    return AgentPhase(updates=updates, seeded=seeded, failure=failure, started=started)


def end_agent_phase(ctx: RunContext, run_id: str, phase: AgentPhase, attempt: int | None = None) -> bool:
    """running -> judging with the phase's results; False if the run is no longer this attempt's."""
    with ctx.sessions() as session:
        moved = runs.transition(
            session, run_id, RunStatus.running, RunStatus.judging, attempt=attempt,
            finished_at=datetime.now(timezone.utc), duration_s=round(time.monotonic() - phase.started, 3),
            **phase.updates,
        )
        session.commit()
        return moved


def judge_or_record_failure(ctx: RunContext, run_id: str, seed_files: dict[str, bytes] | None = None) -> None:
    """``judge_run``; if judging itself breaks, the run ends ``error`` in the orchestrator layer and it re-raises."""
    try:
        judge_run(ctx, run_id, seed_files=seed_files)
    except Exception as exc:
        with ctx.sessions() as session:
            runs.transition(session, run_id, RunStatus.judging, RunStatus.error, verdict="Error",
                            error_layer=Layer.orchestrator.value,
                            error_message=f"judging failed: {type(exc).__name__}: {exc}"[:4000])
            session.commit()
        raise


def execute_run(ctx: RunContext, run_id: str, interrupt: Interrupt | None = None) -> str:
    """Run, collect and judge ``run_id``; returns its final status. Safe to call twice.

    With ``interrupt``, a run that has not started yet is left queued once it is set, and a run in
    flight stops at its next event and is marked ``interrupted`` (see :mod:`orchestrator.interrupts`).
    """
    if interrupt is not None and interrupt.is_set():
        return RunStatus.queued
    attempt = runs.claim(ctx.sessions, run_id, worker=embedded_worker())
    if attempt is None:
        with ctx.sessions() as session:
            run = session.get(Run, run_id)
            return run.status if run else "missing"
    try:
        phase = run_agent_phase(ctx, run_id, wrap_sink=(lambda sink: InterruptingSink(sink, interrupt))
                                if interrupt is not None else None)
    except RunInterrupted as exc:
        mark_interrupted(ctx.sessions, run_id, attempt, f"{exc}; resume the batch with `integritylab run --resume`",
                         usage=recorded_usage(ctx, run_id))
        return RunStatus.interrupted
    end_agent_phase(ctx, run_id, phase)
    judge_or_record_failure(ctx, run_id, seed_files=phase.seeded)
    with ctx.sessions() as session:
        return session.get(Run, run_id).status  # type: ignore[union-attr]
