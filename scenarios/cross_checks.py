"""Checks that only make sense across scenario folders: duplicate ids and twin pairing."""

from __future__ import annotations

from scenarios.folder_checks import CheckedFolder
from scenarios.located_yaml import line_for
from scenarios.problems import Problem
from scenarios.scenario_files import parse_scenario
from scenarios.scenario_paths import SCENARIO_FILE, real_dir


def cross_check(checked: list[CheckedFolder], problems: list[Problem]) -> None:
    """Duplicate ids and twin pairing, which only make sense across folders."""
    by_id: dict[str, CheckedFolder] = {}
    for item in checked:
        if item.loaded is None:
            continue
        sid = item.loaded.id
        if sid in by_id:
            item.duplicate = True
            problems.append(
                Problem(
                    file=item.scenario_file,
                    field="id",
                    line=line_for(item.doc.root if item.doc else None, ("id",)),
                    message=f"duplicate id {sid!r}: also defined in {by_id[sid].scenario_file}",
                )
            )
        else:
            by_id[sid] = item

    broken = {item.raw_id for item in checked if item.loaded is None and item.raw_id}
    broken_dirs = {real_dir(item.directory) for item in checked if item.loaded is None}
    for item in by_id.values():
        assert item.loaded is not None
        scenario = item.loaded.scenario
        if scenario.twin is None:
            continue
        line = line_for(item.doc.root if item.doc else None, ("twin",))

        def report(message: str) -> None:
            problems.append(Problem(file=item.scenario_file, field="twin", line=line, message=message))

        if scenario.twin == scenario.id:
            report("a scenario cannot be its own twin")
            continue
        if scenario.twin in by_id:
            twin = by_id[scenario.twin].loaded
            assert twin is not None
            other = twin.scenario
        elif scenario.twin in broken:
            continue  # the twin's own problems are already reported
        else:
            # Validating one folder alone: look for the twin beside it.
            sibling = item.loaded.directory / ".." / scenario.twin / SCENARIO_FILE
            if real_dir(sibling.parent) in broken_dirs:
                continue  # checked already; its own problems say why it does not load
            if not sibling.is_file():
                report(f"twin {scenario.twin!r} not found among the loaded scenarios")
                continue
            other, _ = parse_scenario(sibling, [])
            if other is None or other.id != scenario.twin:
                report(f"twin {scenario.twin!r} beside this folder does not load; validate it too")
                continue
        if other.role == scenario.role:
            report(
                f"twin {scenario.twin!r} is also a {other.role.value}; "
                "a trap's twin must be a control and vice versa"
            )
        if other.family != scenario.family:
            report(
                f"twin {scenario.twin!r} is a {other.family.value} scenario, "
                f"this one is {scenario.family.value}"
            )
        if other.twin != scenario.id:
            report(
                f"twin {scenario.twin!r} names {other.twin!r} as its twin, not {scenario.id!r}"
            )
