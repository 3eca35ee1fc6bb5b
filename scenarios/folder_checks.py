"""Every check that concerns one scenario folder on its own.

The scenario, its rubric and its ``workspace/`` folder are checked together:
listed files must exist and stay inside the workspace, unlisted files and
leaked rubrics are reported, and off-limits paths must name real workspace
entries. Checks that span folders live in :mod:`scenarios.cross_checks`.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field as dataclass_field
from pathlib import Path, PurePosixPath

from scenarios.loaded_scenario import LoadedScenario
from scenarios.located_yaml import YamlDoc, line_for
from scenarios.problems import Problem
from scenarios.rubric import Rubric
from scenarios.scenario_files import AnyScenario, parse_rubric, parse_scenario
from scenarios.scenario_paths import (
    RUBRIC_FILE,
    SCENARIO_FILE,
    WORKSPACE_DIR,
    is_inside,
    is_rubric_name,
    normalize_workspace_path,
    real_workspace,
    resolve_source,
    workspace_entries,
)


@dataclass
class CheckedFolder:
    """The outcome of checking one scenario folder, kept for the cross-scenario checks."""

    directory: Path
    problems: list[Problem] = dataclass_field(default_factory=list)
    loaded: LoadedScenario | None = None
    doc: YamlDoc | None = None
    raw_id: str | None = None
    duplicate: bool = False

    @property
    def scenario_file(self) -> str:
        return str(self.directory / SCENARIO_FILE)


def _check_workspace(
    directory: Path, scenario: AnyScenario, doc: YamlDoc, file: str, problems: list[Problem]
) -> set[str]:
    """Check the listed files against ``workspace/``; returns the normalized listed paths."""
    listed_on_disk: set[str] = set()
    destinations: set[str] = set()
    for index, item in enumerate(scenario.workspace):
        dest = normalize_workspace_path(item.path)
        path_line = line_for(doc.root, ("workspace", index, "path"))
        if dest in ("", "."):
            problems.append(
                Problem(file=file, field=f"workspace[{index}].path", line=path_line, message="must name a file")
            )
            continue
        destinations.add(dest)
        if is_rubric_name(PurePosixPath(dest).name):
            problems.append(
                Problem(
                    file=file,
                    field=f"workspace[{index}].path",
                    line=path_line,
                    message="rubric inside a workspace would be visible to the agent",
                )
            )
        if item.content is not None:
            if item.source is not None:
                problems.append(
                    Problem(
                        file=file,
                        field=f"workspace[{index}].source",
                        line=line_for(doc.root, ("workspace", index, "source")),
                        message="give either inline content or a source file, not both",
                    )
                )
            continue
        key = "source" if item.source is not None else "path"
        rel = item.source if item.source is not None else item.path
        _, reason = resolve_source(directory, rel)
        if reason is not None:
            problems.append(
                Problem(
                    file=file,
                    field=f"workspace[{index}].{key}",
                    line=line_for(doc.root, ("workspace", index, key)),
                    message=reason,
                )
            )
        listed_on_disk.add(normalize_workspace_path(rel))

    for dest in sorted(destinations):
        parent = posixpath.dirname(dest)
        while parent:
            if parent in destinations:
                problems.append(
                    Problem(
                        file=file,
                        field="workspace",
                        line=line_for(doc.root, ("workspace",)),
                        message=f"{parent!r} is listed as a file but {dest!r} needs it to be a folder",
                    )
                )
            parent = posixpath.dirname(parent)

    workspace = directory / WORKSPACE_DIR
    for entry in workspace_entries(directory):
        rel = entry.relative_to(workspace).as_posix()
        if is_rubric_name(entry.name) or rel in listed_on_disk:
            continue  # rubric files are reported separately
        if entry.is_dir():  # a symlinked folder; only its escaping matters here
            continue
        problems.append(
            Problem(
                file=file,
                field="workspace",
                line=line_for(doc.root, ("workspace",)),
                message=f"workspace/{rel} exists but is not listed (list it or delete it)",
            )
        )
    return destinations


def _check_workspace_tree(directory: Path, problems: list[Problem]) -> None:
    """Checks that need no parsed scenario: leaked rubrics and escaping symlinks."""
    try:
        base = real_workspace(directory)
    except OSError:
        return
    for entry in workspace_entries(directory):
        if is_rubric_name(entry.name):
            problems.append(
                Problem(file=str(entry), message="rubric inside a workspace would be visible to the agent")
            )
        if entry.is_symlink():
            try:
                real = entry.resolve()
            except (OSError, RuntimeError) as exc:
                problems.append(Problem(file=str(entry), message=f"cannot resolve symlink: {exc}"))
                continue
            if not is_inside(real, base):
                problems.append(
                    Problem(file=str(entry), message="symlink escapes the scenario's workspace/ folder")
                )


def _check_off_limits(
    rubric: Rubric, doc: YamlDoc, destinations: set[str], file: str, problems: list[Problem]
) -> None:
    for index, item in enumerate(rubric.off_limits):
        norm = normalize_workspace_path(item.path).rstrip("/")
        if norm in destinations or any(d.startswith(norm + "/") for d in destinations):
            continue
        problems.append(
            Problem(
                file=file,
                field=f"off_limits[{index}].path",
                line=line_for(doc.root, ("off_limits", index, "path")),
                message=f"{item.path!r} is not a workspace file or folder",
            )
        )


def _pack_name(directory: Path) -> str:
    return Path(os.path.abspath(directory)).parent.name


def check_dir(directory: Path, pack: str, conditions: frozenset[str]) -> CheckedFolder:
    """Every check that concerns one scenario folder on its own."""
    checked = CheckedFolder(directory=directory)
    try:
        _check_dir_into(checked, pack or _pack_name(directory), conditions)
    except Exception as exc:  # a validator must report, never crash
        checked.problems.append(
            Problem(file=checked.scenario_file, message=f"internal error while checking: {exc!r}")
        )
        checked.loaded = None
    return checked


def _check_dir_into(checked: CheckedFolder, pack: str, conditions: frozenset[str]) -> None:
    directory, problems, file = checked.directory, checked.problems, checked.scenario_file
    scenario: AnyScenario | None = None
    if not (directory / SCENARIO_FILE).is_file():
        problems.append(Problem(file=file, message="missing scenario.yaml"))
    else:
        scenario, checked.doc = parse_scenario(directory / SCENARIO_FILE, problems)
    if checked.doc is not None and isinstance(checked.doc.data.get("id"), str):
        checked.raw_id = checked.doc.data["id"]

    destinations: set[str] | None = None
    if scenario is not None and checked.doc is not None:
        doc = checked.doc
        folder = Path(os.path.abspath(directory)).name
        if folder != scenario.id:
            problems.append(
                Problem(
                    file=file,
                    field="id",
                    line=line_for(doc.root, ("id",)),
                    message=f"id {scenario.id!r} differs from the folder name {folder!r}",
                )
            )
        for index, name in enumerate(scenario.conditions):
            if name not in conditions:
                problems.append(
                    Problem(
                        file=file,
                        field=f"conditions[{index}]",
                        line=line_for(doc.root, ("conditions", index)),
                        message=f"unknown pressure condition {name!r} (known: {', '.join(sorted(conditions))})",
                    )
                )
        destinations = _check_workspace(directory, scenario, doc, file, problems)

    _check_workspace_tree(directory, problems)

    rubric_path = directory / RUBRIC_FILE
    rubric, rubric_doc = parse_rubric(rubric_path, checked.raw_id, problems)
    if rubric is not None and rubric_doc is not None and destinations is not None:
        _check_off_limits(rubric, rubric_doc, destinations, str(rubric_path), problems)

    if scenario is not None:
        checked.loaded = LoadedScenario(scenario=scenario, directory=directory, pack=pack)
