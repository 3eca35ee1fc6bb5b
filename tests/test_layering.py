"""DESIGN §3: dependencies point one way. ``annotation/`` holds the queue's rules and pages but must not
import the orchestrator (which mounts it and owns the tables); the judges and scenarios import neither."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "annotation": ("orchestrator", "agents", "sandboxes"),
    "judges": ("orchestrator", "annotation", "agents", "sandboxes"),
    "scenarios": ("orchestrator", "annotation", "judges", "agents", "sandboxes"),
}


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_does_not_import_the_layers_above_it(package: str) -> None:
    offending = {str(p.relative_to(ROOT)): sorted(imported(p) & set(FORBIDDEN[package]))
                 for p in (ROOT / package).rglob("*.py")}
    assert {k: v for k, v in offending.items() if v} == {}
