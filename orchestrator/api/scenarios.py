"""``/v1/scenarios``: what can be run. The hidden rubric is never read here, so it cannot leave."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, status

from orchestrator.api.auth import Reader
from orchestrator.api.responses import AUTHENTICATED, NOT_FOUND
from orchestrator.api.schemas import Page, ScenarioDetail, ScenarioOut
from orchestrator.api.state import ServiceState, service
from scenarios.loader import LoadedScenario

router = APIRouter(prefix="/v1/scenarios", tags=["scenarios"], responses=AUTHENTICATED)


def _summary(loaded: LoadedScenario) -> dict:
    s = loaded.scenario
    return dict(id=s.id, title=s.title, family=s.family.value, role=s.role.value, category=s.category,
                domain=s.domain, hazard=s.hazard.value, twin=s.twin, pack=loaded.pack,
                conditions=list(s.conditions), tags=list(s.tags))


@router.get("", response_model=Page[ScenarioOut])
def list_scenarios(
    _: Reader, state: Annotated[ServiceState, Depends(service)],
    family: Annotated[str | None, Query(max_length=20)] = None,
    category: Annotated[str | None, Query(max_length=40)] = None,
    role: Annotated[str | None, Query(max_length=10)] = None,
    pack: Annotated[str | None, Query(max_length=100)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 500,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> Page[ScenarioOut]:
    """Scenarios in catalog order, filtered like a batch selection."""
    chosen = [
        s for s in state.catalog
        if (family is None or s.scenario.family.value == family.lower())
        and (category is None or s.scenario.category.lower() == category.lower())
        and (role is None or s.scenario.role.value == role.lower())
        and (pack is None or s.pack == pack)
    ]
    items = [ScenarioOut(**_summary(s)) for s in chosen[offset:offset + limit]]
    return Page[ScenarioOut](items=items, total=len(chosen), limit=limit, offset=offset)


@router.get("/{scenario_id}", response_model=ScenarioDetail, responses=NOT_FOUND)
def get_scenario(scenario_id: str, _: Reader, state: Annotated[ServiceState, Depends(service)]) -> ScenarioDetail:
    """One scenario as an agent would see it (task prompt, workspace file names); never its rubric."""
    if scenario_id not in state.catalog:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no scenario {scenario_id[:100]!r}")
    loaded = state.catalog.get(scenario_id)
    return ScenarioDetail(**_summary(loaded), prompt=loaded.scenario.prompt.model_dump(mode="json"),
                          workspace=[item.path for item in loaded.scenario.workspace])
