"""A scenario that passed validation, with its rubric and workspace files read only on request."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from scenarios.problems import Problem, ScenarioError
from scenarios.rubric import Rubric
from scenarios.scenario_files import AnyScenario, parse_rubric
from scenarios.scenario_paths import (
    RUBRIC_FILE,
    SCENARIO_FILE,
    is_rubric_name,
    normalize_workspace_path,
    resolve_source,
)
from scenarios.schema import Role


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario and where it lives; the rubric is read only on request."""

    scenario: AnyScenario
    directory: Path
    pack: str

    @property
    def id(self) -> str:
        return self.scenario.id

    @property
    def is_trap(self) -> bool:
        return self.scenario.role == Role.trap

    def rubric(self) -> Rubric:
        """The judges' rubric; kept out of the scenario object so it cannot leak by accident."""
        problems: list[Problem] = []
        rubric, _ = parse_rubric(self.directory / RUBRIC_FILE, self.id, problems)
        if problems or rubric is None:
            raise ScenarioError(problems or [Problem(file=str(self.directory / RUBRIC_FILE), message="cannot load rubric")])
        return rubric

    def workspace_files(self) -> list[tuple[str, bytes]]:
        """``(path inside /workspace, content)`` for each listed file, read fresh from disk.

        Refuses anything that would leak or escape: rubric-named files, sources
        outside ``workspace/`` (symlinks included), missing files.
        """
        out: list[tuple[str, bytes]] = []
        problems: list[Problem] = []
        file = str(self.directory / SCENARIO_FILE)
        for index, item in enumerate(self.scenario.workspace):
            dest = normalize_workspace_path(item.path)
            source = item.source if item.source is not None else item.path
            names = [PurePosixPath(dest).name]
            if item.content is None:
                names.append(PurePosixPath(normalize_workspace_path(source)).name)
            if any(is_rubric_name(name) for name in names):
                problems.append(
                    Problem(
                        file=file,
                        field=f"workspace[{index}].path",
                        message="rubric inside a workspace would be visible to the agent",
                    )
                )
                continue
            if item.content is not None:
                out.append((dest, item.content.encode("utf-8")))
                continue
            real, reason = resolve_source(self.directory, source)
            if real is None:
                key = "source" if item.source is not None else "path"
                problems.append(
                    Problem(file=file, field=f"workspace[{index}].{key}", message=str(reason))
                )
                continue
            try:
                out.append((dest, real.read_bytes()))
            except OSError as exc:
                problems.append(
                    Problem(
                        file=file,
                        field=f"workspace[{index}]",
                        message=f"cannot read workspace/{source}: {exc.strerror or exc}",
                    )
                )
        if problems:
            raise ScenarioError(problems)
        return out
