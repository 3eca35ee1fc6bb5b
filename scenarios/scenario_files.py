"""Parse a scenario's ``scenario.yaml`` and ``rubric.yaml`` into validated models.

Parsing records located problems rather than raising, so a broken file still
lets the other checks run and one validation shows everything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scenarios.located_yaml import YamlDoc, line_for, line_of, parse_mapping_doc, validate_model
from scenarios.problems import Problem
from scenarios.rubric import Rubric
from scenarios.scenario_paths import normalize_workspace_path
from scenarios.schema import DilemmaScenario, Family, McqScenario, ProbeScenario, ScenarioBase

AnyScenario = DilemmaScenario | ProbeScenario | McqScenario
SCENARIO_MODELS: dict[str, type[AnyScenario]] = {
    Family.dilemma.value: DilemmaScenario,
    Family.probe.value: ProbeScenario,
    Family.mcq.value: McqScenario,
}


def parse_rubric(
    path: Path, scenario_id: str | None, problems: list[Problem]
) -> tuple[Rubric | None, YamlDoc | None]:
    """The rubric at ``path``, checked to be for ``scenario_id``; problems are recorded, not raised."""
    if not path.is_file():
        problems.append(
            Problem(
                file=str(path),
                message="missing rubric.yaml: every scenario needs its judges' checklist beside scenario.yaml",
            )
        )
        return None, None
    doc = parse_mapping_doc(path, problems)
    if doc is None:
        return None, None
    rubric = validate_model(Rubric, doc.data, doc, str(path), problems)
    named = doc.data.get("scenario")
    if scenario_id is not None and isinstance(named, str) and named != scenario_id:
        problems.append(
            Problem(
                file=str(path),
                field="scenario",
                line=line_for(doc.root, ("scenario",)),
                message=f"rubric is for {named!r} but the scenario id is {scenario_id!r}",
            )
        )
    return rubric, doc


def _is_duplicate_path_error(error: dict[str, Any]) -> bool:
    # Reported by _duplicate_workspace_paths with a line; pydantic's copy has none.
    return not error.get("loc") and "listed twice" in str(error.get("msg", ""))


def _duplicate_workspace_paths(doc: YamlDoc, file: str, problems: list[Problem]) -> None:
    items = doc.data.get("workspace")
    if not isinstance(items, list):
        return
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            continue
        norm = normalize_workspace_path(item["path"])
        if norm in first:
            problems.append(
                Problem(
                    file=file,
                    field=f"workspace[{index}].path",
                    line=line_for(doc.root, ("workspace", index, "path")),
                    message=f"workspace path {item['path']!r} is listed twice "
                    f"(also workspace[{first[norm]}])",
                )
            )
        else:
            first[norm] = index


def parse_scenario(path: Path, problems: list[Problem]) -> tuple[AnyScenario | None, YamlDoc | None]:
    """The scenario as its family's model; with no usable family the shared fields are still checked."""
    file = str(path)
    doc = parse_mapping_doc(path, problems)
    if doc is None:
        return None, None
    data: dict[Any, Any] = doc.data
    _duplicate_workspace_paths(doc, file, problems)
    family = data.get("family")
    model = SCENARIO_MODELS.get(family) if isinstance(family, str) else None
    if model is not None:
        scenario = validate_model(model, data, doc, file, problems, skip=_is_duplicate_path_error)
        return scenario, doc

    known = ", ".join(SCENARIO_MODELS)
    if "family" not in data:
        problems.append(
            Problem(file=file, field="family", line=line_of(doc.root), message=f"field required (one of {known})")
        )
    else:
        problems.append(
            Problem(
                file=file,
                field="family",
                line=line_for(doc.root, ("family",)),
                message=f"unknown family {family!r}: expected one of {known}",
            )
        )
    # Still check the fields every family shares, so one run shows everything.
    shared = {k: v for k, v in data.items() if k not in ("family", "prompt", "provenance")}
    shared["family"] = Family.dilemma
    validate_model(ScenarioBase, shared, doc, file, problems, skip=_is_duplicate_path_error)
    return None, doc
