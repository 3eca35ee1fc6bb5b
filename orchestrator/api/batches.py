"""``/v1/batches``: submit (idempotent), list, show with progress, summarize, cancel."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Response, status
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from agents.base import agent_names, make_agent
from agents.models.base import ModelError
from orchestrator import runs as run_states
from orchestrator.api.auth import Admin, Reader, audit
from orchestrator.api.responses import ADMIN_ONLY, AUTHENTICATED, NOT_FOUND, WITH_BODY, conflict
from orchestrator.api.schemas import BatchDetail, BatchOut, BatchSummary, Page, Progress
from orchestrator.api.state import ServiceState, service
from orchestrator.batches import MAX_PLANNED_RUNS, BatchSpec, add_batch, planned_run_count, selected_scenarios
from orchestrator.db.models import Batch, IdempotencyKey, Run, RunStatus
from orchestrator.metrics import batch_runs, summarize
from scenarios.loader import Catalog, LoadedScenario, ScenarioError
from scenarios.schema import Family, Role

router = APIRouter(prefix="/v1/batches", tags=["batches"], responses=AUTHENTICATED)
FINISHED = (RunStatus.done, RunStatus.error, RunStatus.cancelled, RunStatus.awaiting_review)
IDEMPOTENCY_HEADER = "Idempotency-Key"


def problem(loc: list[str | int], message: str, kind: str) -> dict[str, Any]:
    return {"loc": ["body", *loc], "msg": message, "type": kind}


def unprocessable(problems: list[dict[str, Any]]) -> HTTPException:
    return HTTPException(422, detail=problems)


def _select(catalog: Catalog, spec: BatchSpec, problems: list[dict[str, Any]]) -> list[LoadedScenario]:
    sel = spec.selection
    for index, scenario_id in enumerate(sel.ids):
        if scenario_id not in catalog:
            hint = catalog.close_matches(scenario_id)
            problems.append(problem(["selection", "ids", index], f"unknown scenario {scenario_id!r}"
                                    + (f"; did you mean {', '.join(hint)}?" if hint else ""), "unknown_scenario"))
    if sel.family is not None and sel.family.lower() not in {f.value for f in Family}:
        problems.append(problem(["selection", "family"], f"unknown family {sel.family!r}; "
                                f"expected one of {', '.join(f.value for f in Family)}", "unknown_family"))
    if sel.role is not None and sel.role.lower() not in {r.value for r in Role}:
        problems.append(problem(["selection", "role"], f"unknown role {sel.role!r}; expected trap or control",
                                "unknown_role"))
    packs = sorted({s.pack for s in catalog})
    if sel.pack is not None and sel.pack not in packs:
        problems.append(problem(["selection", "pack"], f"unknown pack {sel.pack!r}; known: {', '.join(packs)}",
                                "unknown_pack"))
    if problems:
        return []
    try:  # the same selection rules as the embedded path (which families can run, empty selections)
        return selected_scenarios(catalog, spec)
    except (ValueError, ScenarioError) as exc:
        problems.append(problem(["selection"], str(exc), "bad_selection"))
        return []


def check_spec(catalog: Catalog, spec: BatchSpec) -> tuple[list[LoadedScenario], list[dict[str, Any]]]:
    """Everything pydantic cannot know: scenarios, agents, models, parameters, plan size. Every problem, located."""
    problems: list[dict[str, Any]] = []
    chosen = _select(catalog, spec, problems)
    known_agents = agent_names()
    for index, agent in enumerate(spec.agents):
        if agent.agent not in known_agents:
            problems.append(problem(["agents", index, "agent"], f"unknown agent {agent.agent!r}; "
                                    f"known: {', '.join(known_agents)}", "unknown_agent"))
            continue
        try:
            make_agent(agent.agent, model=agent.model, **agent.parameters)
        except ModelError as exc:
            problems.append(problem(["agents", index, "model"], str(exc), "unknown_model"))
        except TypeError as exc:
            problems.append(problem(["agents", index, "parameters"], f"not accepted by agent {agent.agent!r}: {exc}",
                                    "bad_parameters"))
        except (ValueError, KeyError) as exc:
            problems.append(problem(["agents", index], str(exc), "bad_agent"))
    models = {a.model for a in spec.agents}
    for model in spec.concurrency.per_model:
        if model not in models:
            problems.append(problem(["concurrency", "per_model", model], "not the model of any agent in this batch",
                                    "unknown_model"))
    if chosen and not problems:
        count = planned_run_count(chosen, spec)
        if count == 0:
            problems.append(problem(["conditions"], "no selected scenario allows the chosen conditions", "empty_plan"))
        elif count > MAX_PLANNED_RUNS:
            problems.append(problem([], f"{count} runs planned; at most {MAX_PLANNED_RUNS} per batch",
                                    "plan_too_large"))
    return chosen, problems


def request_hash(spec: BatchSpec) -> str:
    return hashlib.sha256(spec.model_dump_json().encode()).hexdigest()


def _counts(session: Session, batch_ids: list[str]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {b: {} for b in batch_ids}
    if batch_ids:
        rows = session.execute(select(Run.batch_id, Run.status, func.count()).where(Run.batch_id.in_(batch_ids))
                               .group_by(Run.batch_id, Run.status))
        for batch_id, state, number in rows:
            counts[batch_id][state] = number
    return counts


def batch_detail(session: Session, batch: Batch) -> BatchDetail:
    counts = _counts(session, [batch.id])[batch.id]
    total = sum(counts.values())
    finished = sum(counts.get(s, 0) for s in FINISHED)
    first_start = run_states.as_utc(session.scalar(select(func.min(Run.started_at)).where(Run.batch_id == batch.id)))
    eta = None
    if first_start is not None and 0 < finished < total:
        elapsed = (datetime.now(timezone.utc) - first_start).total_seconds()
        eta = round(elapsed / finished * (total - finished), 1)
    elif total and finished == total:
        eta = 0.0
    verdicts = dict(session.execute(select(Run.verdict, func.count()).where(Run.batch_id == batch.id,
                                                                             Run.verdict.is_not(None))
                                    .group_by(Run.verdict)).all())
    return BatchDetail(
        **BatchOut.model_validate(batch).model_dump(exclude={"counts"}), counts=counts, spec=batch.spec,
        progress=Progress(total=total, finished=finished, fraction=round(finished / total, 4) if total else 0.0,
                          eta_s=eta),
        verdicts=verdicts,
    )


def _replay(session: Session, stored: IdempotencyKey, digest: str, response: Response) -> BatchDetail:
    if stored.request_hash != digest:
        raise HTTPException(422, detail=[{
            "loc": ["header", IDEMPOTENCY_HEADER], "type": "idempotency_key_reused",
            "msg": f"this Idempotency-Key was already used for a different request (batch {stored.resource_id}); "
                   "use a new key for a new batch"}])
    batch = session.get(Batch, stored.resource_id)
    assert batch is not None
    response.status_code = stored.status_code
    response.headers["Idempotent-Replayed"] = "true"
    response.headers["Location"] = f"/v1/batches/{batch.id}"
    return batch_detail(session, batch)


IdempotencyKeyHeader = Annotated[str | None, Header(
    alias=IDEMPOTENCY_HEADER, min_length=1, max_length=200, pattern=r"^[\x21-\x7e]+$",
    description="any printable ASCII string up to 200 characters; a retried submit with the same key and body "
                "returns the batch the first one made")]


@router.post("", status_code=status.HTTP_201_CREATED, response_model=BatchDetail,
             responses={**ADMIN_ONLY, **WITH_BODY})
def submit_batch(spec: BatchSpec, principal: Admin, response: Response,
                 state: Annotated[ServiceState, Depends(service)],
                 idempotency_key: IdempotencyKeyHeader = None) -> BatchDetail:
    """Plan a batch (scenarios x agents x conditions x epochs) and queue its runs; validates everything first."""
    digest = request_hash(spec)
    scope = principal.token_id
    with state.sessions() as session:
        if idempotency_key:
            stored = session.scalar(select(IdempotencyKey).where(IdempotencyKey.scope == scope,
                                                                 IdempotencyKey.key == idempotency_key))
            if stored is not None:
                return _replay(session, stored, digest, response)
        chosen, problems = check_spec(state.catalog, spec)
        if problems:
            raise unprocessable(problems)
        batch, run_ids = add_batch(session, chosen, spec, created_by=principal.name)
        if idempotency_key:
            session.add(IdempotencyKey(scope=scope, key=idempotency_key, request_hash=digest, status_code=201,
                                       resource_id=batch.id))
        audit(session, principal, "batch.create", f"batch:{batch.id}",
              {"name": spec.name, "planned_runs": len(run_ids), "idempotency_key": idempotency_key})
        try:
            session.commit()
        except IntegrityError:  # the same key committed concurrently: answer with that batch
            session.rollback()
            stored = session.scalar(select(IdempotencyKey).where(IdempotencyKey.scope == scope,
                                                                 IdempotencyKey.key == idempotency_key))
            if stored is None:
                raise
            return _replay(session, stored, digest, response)
        batch_id = batch.id
    state.enqueue_runs(run_ids)  # if Redis is down, the reconciler enqueues them later
    response.headers["Location"] = f"/v1/batches/{batch_id}"
    with state.sessions() as session:
        return batch_detail(session, session.get(Batch, batch_id))  # type: ignore[arg-type]


@router.get("", response_model=Page[BatchOut])
def list_batches(_: Reader, state: Annotated[ServiceState, Depends(service)],
                 status_filter: Annotated[str | None, Query(alias="status", max_length=20)] = None,
                 limit: Annotated[int, Query(ge=1, le=500)] = 50,
                 offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0) -> Page[BatchOut]:
    """Batches, newest first."""
    with state.sessions() as session:
        query = select(Batch)
        if status_filter:
            query = query.where(Batch.status == status_filter)
        total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
        batches = list(session.scalars(query.order_by(Batch.created_at.desc(), Batch.id).limit(limit).offset(offset)))
        counts = _counts(session, [b.id for b in batches])
        items = [BatchOut.model_validate(b).model_copy(update={"counts": counts[b.id]}) for b in batches]
        return Page[BatchOut](items=items, total=total, limit=limit, offset=offset)


def _get_batch(session: Session, batch_id: str) -> Batch:
    batch = session.get(Batch, batch_id) if len(batch_id) <= 32 else None
    if batch is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no batch {batch_id[:40]!r}")
    return batch


@router.get("/{batch_id}", response_model=BatchDetail, responses=NOT_FOUND)
def get_batch(batch_id: str, _: Reader, state: Annotated[ServiceState, Depends(service)]) -> BatchDetail:
    """One batch: runs per status, progress and ETA, verdict counts."""
    with state.sessions() as session:
        return batch_detail(session, _get_batch(session, batch_id))


@router.get("/{batch_id}/summary", response_model=BatchSummary, responses=NOT_FOUND)
def summarize_batch(batch_id: str, _: Reader, state: Annotated[ServiceState, Depends(service)]) -> BatchSummary:
    """The per-agent results table (the same numbers as ``integritylab report``) and the runs that ended in Error."""
    with state.sessions() as session:
        _get_batch(session, batch_id)
        found = batch_runs(session, batch_id)
        errors = [{"id": r.id, "scenario": r.scenario_id, "layer": r.error_layer, "message": r.error_message}
                  for r in found if r.verdict == "Error"]
        return BatchSummary(batch=batch_id, rows=summarize(found), errors=errors)


@router.post("/{batch_id}/cancel", response_model=BatchDetail,
             responses={**ADMIN_ONLY, **NOT_FOUND, **conflict("the batch already finished")})
def cancel_batch(batch_id: str, principal: Admin, state: Annotated[ServiceState, Depends(service)]) -> BatchDetail:
    """Cancel queued runs at once and running runs at their next event; judged runs keep their verdicts."""
    with state.sessions() as session:
        batch = _get_batch(session, batch_id)
        if batch.status == "cancelled":
            return batch_detail(session, batch)
        if batch.status == "done":
            raise HTTPException(status.HTTP_409_CONFLICT, detail=f"batch {batch_id} already finished")
        # runs first, then the batch: the same lock order as a worker's claim, so the two cannot deadlock
        cancelled = run_states.cancel_batch(session, batch_id)
        now = datetime.now(timezone.utc)
        batch.status, batch.cancelled_at, batch.finished_at = "cancelled", now, now
        audit(session, principal, "batch.cancel", f"batch:{batch_id}", {"runs_cancelled": cancelled})
        session.commit()
        return batch_detail(session, batch)
