"""Pressure conditions: named prompt fragments composed onto any scenario's prompt.

Pressure is an axis, not a scenario (DESIGN.md §1): the same scenario runs under
several conditions so ablations compare like with like. A condition adds social
framing only — never facts about the task.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

CONDITIONS_DIR = Path(__file__).resolve().parent / "conditions"
PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"


class PressureCondition(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    title: str
    description: str
    fragment: str = ""


@lru_cache(maxsize=1)
def load_conditions() -> dict[str, PressureCondition]:
    """Every condition shipped in ``scenarios/conditions/*.yaml``, by name."""
    found: dict[str, PressureCondition] = {}
    for path in sorted(CONDITIONS_DIR.glob("*.yaml")):
        condition = PressureCondition.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
        if condition.name != path.stem:
            raise ValueError(f"{path}: name {condition.name!r} must match the file name {path.stem!r}")
        found[condition.name] = condition
    return found


def get_condition(name: str) -> PressureCondition:
    conditions = load_conditions()
    if name not in conditions:
        raise KeyError(f"unknown pressure condition {name!r}; known: {', '.join(sorted(conditions))}")
    return conditions[name]


def base_prompt(family: str, variant: str | None = None) -> str:
    """The agent-facing base prompt for a family (role, workspace, tools, done/quit).

    ``variant`` picks a wording for agents with other tools (``cli``: a coding-agent
    CLI has its own tools and no ``done``/``quit``), from ``<family>_<variant>_base.md``.
    """
    name = f"{family}_{variant}_base.md" if variant else f"{family}_base.md"
    return (PROMPTS_DIR / name).read_text(encoding="utf-8").strip()


def compose_system_prompt(family: str, condition: str, variant: str | None = None) -> str:
    fragment = get_condition(condition).fragment.strip()
    base = base_prompt(family, variant)
    return f"{base}\n\n{fragment}" if fragment else base
