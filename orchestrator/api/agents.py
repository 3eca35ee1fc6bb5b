"""``/v1/agents``: the agent kinds, model providers, scripted policies and pressure conditions a batch may name."""

from __future__ import annotations

from fastapi import APIRouter

from agents.base import agent_names
from agents.models.registry import provider_prefixes
from agents.scripted.policies import POLICIES
from orchestrator.api.auth import Reader
from orchestrator.api.responses import AUTHENTICATED
from orchestrator.api.schemas import AgentsOut
from scenarios.conditions import load_conditions

router = APIRouter(prefix="/v1/agents", tags=["agents"], responses=AUTHENTICATED)


@router.get("", response_model=AgentsOut)
def list_agents(_: Reader) -> AgentsOut:
    """Use ``agent`` and ``model`` (``<provider>:<name>``, e.g. ``scripted:honest``) in a batch's ``agents``."""
    return AgentsOut(agents=agent_names(), model_providers=provider_prefixes(), scripted_policies=sorted(POLICIES),
                     conditions=sorted(load_conditions()))
