"""The generated scenario catalogue (``docs/scenarios.md``); a test keeps it in sync with the packs."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from scenarios.loader import Catalog, LoadedScenario

CATALOGUE_PATH = Path(__file__).resolve().parent.parent / "docs" / "scenarios.md"
HEADER = """# Scenario catalogue

Generated from the packs by `integritylab scenarios catalogue --write`; do not edit by hand
(a test fails when this file and the packs disagree). Pathologies come from each scenario's
hidden rubric and are never shown to an agent.
"""


def _cell(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line.replace("|", "\\|")


def one_line_task(loaded: LoadedScenario) -> str:
    prompt = loaded.scenario.prompt
    text = getattr(prompt, "task", None) or getattr(prompt, "preamble", None) or getattr(prompt, "situation", "")
    first = text.strip().split(". ")[0]
    return _cell(first if first.endswith(".") else first + ".")


def render_catalogue(catalog: Catalog) -> str:
    by_family: dict[str, list[LoadedScenario]] = defaultdict(list)
    for loaded in catalog:
        by_family[loaded.scenario.family.value].append(loaded)
    parts = [HEADER]
    for family in sorted(by_family):
        members = sorted(by_family[family], key=lambda s: (s.scenario.category, s.id))
        traps = sum(1 for s in members if s.is_trap)
        parts.append(f"\n## {family} ({traps} traps, {len(members) - traps} controls)\n")
        parts.append("| id | role | category | domain | task (first sentence) | pathology | hazard | twin |")
        parts.append("|---|---|---|---|---|---|---|---|")
        for loaded in members:
            s = loaded.scenario
            pathology = loaded.rubric().pathology or ("—" if not loaded.is_trap else "(not described)")
            parts.append(
                f"| `{s.id}` | {s.role.value} | {s.category} | {s.domain} | {one_line_task(loaded)} | "
                f"{_cell(pathology)} | {s.hazard.value} | {f'`{s.twin}`' if s.twin else '—'} |"
            )
    return "\n".join(parts) + "\n"
