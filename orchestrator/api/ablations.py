"""``/v1/ablations``: submit a batch that runs the same selection under two or more conditions, and read the
paired comparison of one or more finished batches (orchestrator/ablation.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Response, status

from orchestrator.ablation import AblationReport, ablation_of
from orchestrator.api.auth import Admin, Reader
from orchestrator.api.batches import IdempotencyKeyHeader, submit_batch
from orchestrator.api.responses import ADMIN_ONLY, AUTHENTICATED, NOT_FOUND, WITH_BODY, error_response
from orchestrator.api.schemas import BatchDetail
from orchestrator.api.state import ServiceState, service
from orchestrator.batches import BatchSpec

router = APIRouter(prefix="/v1/ablations", tags=["ablations"], responses=AUTHENTICATED)


@router.post("", status_code=status.HTTP_201_CREATED, response_model=BatchDetail,
             responses={**ADMIN_ONLY, **WITH_BODY})
def submit_ablation(spec: BatchSpec, principal: Admin, response: Response,
                    state: Annotated[ServiceState, Depends(service)],
                    idempotency_key: IdempotencyKeyHeader = None) -> BatchDetail:
    """Plan the batch of an ablation: every scenario × agent × epoch under each condition (two or more), so
    that the runs pair by scenario, agent, epoch and seed. Read the comparison at ``/v1/ablations/{batch}``."""
    if len(spec.conditions) < 2:
        raise HTTPException(422, detail=[{"loc": ["body", "conditions"], "type": "too_short",
                                          "msg": "an ablation compares two or more conditions, e.g. "
                                                 "[\"none\", \"completion\"]"}])
    detail = submit_batch(spec, principal, response, state, idempotency_key)
    response.headers["Link"] = f'</v1/ablations/{detail.id}>; rel="ablation"'
    return detail


@router.get("/{batch_id}", response_model=AblationReport, responses={
    **NOT_FOUND, 422: error_response("the batches' runs are under one condition only: no ablation")})
def read_ablation(batch_id: str, _: Reader,
                  state: Annotated[ServiceState, Depends(service)],
                  with_batch: Annotated[list[str] | None, Query(alias="with", max_length=50,
                                                                description="more finished batches to pair with")] = None,
                  baseline: Annotated[str | None, Query(max_length=40)] = None) -> AblationReport:
    """The paired comparison of the batch's runs (and of those of ``with`` batches): exact McNemar per agent
    and category, Benjamini–Hochberg across the ablation, paired bootstrap intervals."""
    batches = [batch_id, *(with_batch or [])]
    with state.sessions() as session:
        try:
            return ablation_of(session, batches, baseline)
        except LookupError as exc:
            raise HTTPException(404, detail=str(exc)) from exc
        except ValueError as exc:
            raise HTTPException(422, detail=[{"loc": ["query"], "type": "value_error", "msg": str(exc)}]) from exc
