"""Load scenario packs from disk and report every problem in them at once.

A pack author fixes problems faster from one complete list than from a
fix-rerun loop, so validation never stops at the first error: every problem is
collected with its file, dotted field and YAML line. Loading is strict because a
scenario that silently drops a field, leaks its rubric into the sandbox, or
seeds files nobody listed would corrupt every run that uses it.

This module is the stable import surface and holds the entry points; the work
is split across the modules imported below.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from scenarios.cross_checks import cross_check
from scenarios.discovery import discover_scenario_dirs
from scenarios.folder_checks import check_dir
from scenarios.loaded_scenario import LoadedScenario
from scenarios.problems import Problem, ScenarioError, UnknownScenarioError, sorted_problems
from scenarios.scenario_catalog import Catalog
from scenarios.scenario_files import AnyScenario
from scenarios.scenario_paths import RUBRIC_FILE, SCENARIO_FILE, WORKSPACE_DIR, real_dir

__all__ = [
    "ALWAYS_KNOWN_CONDITIONS",
    "AnyScenario",
    "CONDITIONS_DIR",
    "Catalog",
    "LoadedScenario",
    "Problem",
    "RUBRIC_FILE",
    "SCENARIO_FILE",
    "ScenarioError",
    "UnknownScenarioError",
    "WORKSPACE_DIR",
    "builtin_pack_root",
    "known_conditions",
    "load_catalog",
    "load_scenario_dir",
    "validate_paths",
]


ALWAYS_KNOWN_CONDITIONS = frozenset({"none", "completion"})
CONDITIONS_DIR = Path(__file__).resolve().parent / "conditions"
"""Each ``<name>.yaml`` here defines the pressure condition ``<name>``."""


def known_conditions() -> frozenset[str]:
    """Pressure conditions a scenario may name: the built-ins plus one per conditions file."""
    names = set(ALWAYS_KNOWN_CONDITIONS)
    try:
        if CONDITIONS_DIR.is_dir():
            names.update(p.stem for p in CONDITIONS_DIR.glob("*.yaml") if p.is_file())
    except OSError:
        pass
    return frozenset(names)


def _collect(roots: Iterable[Path], require: bool) -> tuple[list[LoadedScenario], list[Problem]]:
    """Check every scenario folder below ``roots``, alone and together.

    It lives here, not beside the checks, so it reads ``CONDITIONS_DIR`` from this
    module, where tests point it at a fixture folder.
    """
    problems: list[Problem] = []
    directories: list[Path] = []
    seen: set[Path] = set()
    for root in roots:
        for directory in discover_scenario_dirs(Path(root), problems, require):
            key = real_dir(directory)
            if key not in seen:  # overlapping roots must not look like duplicate ids
                seen.add(key)
                directories.append(directory)
    conditions = known_conditions()
    checked = [check_dir(directory, "", conditions) for directory in directories]
    for item in checked:
        problems.extend(item.problems)
    cross_check(checked, problems)
    loaded = [item.loaded for item in checked if item.loaded is not None and not item.duplicate]
    return loaded, sorted_problems(problems)


def builtin_pack_root() -> Path:
    """The packs shipped with the project, found from this package so installs work too."""
    return Path(__file__).resolve().parent / "packs"


def load_scenario_dir(directory: Path, pack: str = "") -> LoadedScenario:
    """Load one scenario folder, raising :class:`ScenarioError` with all its problems."""
    directory = Path(directory)
    checked = check_dir(directory, pack, known_conditions())
    cross_check([checked], checked.problems)
    if checked.problems or checked.loaded is None:
        raise ScenarioError(
            sorted_problems(checked.problems)
            or [Problem(file=checked.scenario_file, message="cannot load scenario")]
        )
    return checked.loaded


def load_catalog(roots: list[Path] | None = None) -> Catalog:
    """Load every scenario below ``roots`` (default: the built-in packs), or raise with all problems."""
    chosen = [builtin_pack_root()] if roots is None else [Path(r) for r in roots]
    loaded, problems = _collect(chosen, require=False)
    if problems:
        raise ScenarioError(problems)
    return Catalog(loaded)


def validate_paths(paths: list[Path]) -> tuple[Catalog | None, list[Problem]]:
    """Check pack roots or scenario folders; the catalog is returned only when nothing is wrong."""
    try:
        loaded, problems = _collect([Path(p) for p in paths], require=True)
        if problems:
            return None, problems
        catalog = Catalog(loaded)
        from scenarios.content_checks import content_problems  # needs the loaded catalog

        problems = content_problems(catalog)
        return (None, problems) if problems else (catalog, [])
    except ScenarioError as exc:
        return None, exc.problems
    except Exception as exc:  # last resort: the promise is to report, not to crash
        return None, [Problem(file="", message=f"internal validator error: {exc!r}")]
