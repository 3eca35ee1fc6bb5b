"""Find scenario folders below a pack root, a family folder or a single scenario."""

from __future__ import annotations

import os
from pathlib import Path

from scenarios.problems import Problem
from scenarios.scenario_paths import IGNORED_NAMES, RUBRIC_FILE, SCENARIO_FILE, WORKSPACE_DIR


def discover_scenario_dirs(root: Path, problems: list[Problem], require: bool) -> list[Path]:
    """Scenario folders below ``root``: a pack root, a family folder or one scenario."""
    if not root.exists():
        problems.append(Problem(file=str(root), message="no such file or directory"))
        return []
    if root.is_file():
        if root.name == SCENARIO_FILE:
            return [root.parent]
        problems.append(
            Problem(file=str(root), message="expected a pack folder, a scenario folder or a scenario.yaml")
        )
        return []
    if (root / SCENARIO_FILE).exists():
        return [root]

    found: list[Path] = []

    def unreadable(exc: OSError) -> None:
        problems.append(Problem(file=str(exc.filename or root), message=f"cannot read folder: {exc.strerror or exc}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in IGNORED_NAMES)
        if SCENARIO_FILE in filenames:
            found.append(here)
            dirnames[:] = []  # a scenario's workspace is data, never more scenarios
        elif RUBRIC_FILE in filenames or WORKSPACE_DIR in dirnames:
            problems.append(
                Problem(
                    file=str(here / SCENARIO_FILE),
                    message="missing scenario.yaml in a folder that has rubric.yaml or workspace/",
                )
            )
            dirnames[:] = [d for d in dirnames if d != WORKSPACE_DIR]
    if require and not found:
        problems.append(Problem(file=str(root), message="no scenario.yaml found below this folder"))
    return found
