"""The catalog of loaded scenarios: lookup by id with suggestions, and selection by filters."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from scenarios.loaded_scenario import LoadedScenario
from scenarios.problems import Problem, ScenarioError, UnknownScenarioError
from scenarios.scenario_files import SCENARIO_MODELS
from scenarios.scenario_paths import SCENARIO_FILE
from scenarios.schema import Role


class Catalog:
    """Loaded scenarios by id, in discovery order."""

    def __init__(self, scenarios: list[LoadedScenario]) -> None:
        self._by_id: dict[str, LoadedScenario] = {}
        for loaded in scenarios:
            if loaded.id in self._by_id:
                raise ScenarioError(
                    [
                        Problem(
                            file=str(loaded.directory / SCENARIO_FILE),
                            field="id",
                            message=f"duplicate id {loaded.id!r}: also defined in "
                            f"{self._by_id[loaded.id].directory / SCENARIO_FILE}",
                        )
                    ]
                )
            self._by_id[loaded.id] = loaded

    def __iter__(self) -> Iterator[LoadedScenario]:
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, scenario_id: object) -> bool:
        return scenario_id in self._by_id

    @property
    def ids(self) -> list[str]:
        return list(self._by_id)

    def close_matches(self, scenario_id: str) -> list[str]:
        """Ids an operator probably meant: substring hits first, then fuzzy ones."""
        needle = scenario_id.lower()
        hits = [sid for sid in self._by_id if needle and needle in sid]
        hits += difflib.get_close_matches(scenario_id, list(self._by_id), n=5, cutoff=0.5)
        return list(dict.fromkeys(hits))[:8]

    def _unknown(self, scenario_id: str) -> str:
        matches = self.close_matches(scenario_id)
        hint = f"; did you mean {', '.join(matches)}?" if matches else ""
        return f"unknown scenario id {scenario_id!r}{hint}"

    def get(self, scenario_id: str) -> LoadedScenario:
        try:
            return self._by_id[scenario_id]
        except KeyError:
            raise UnknownScenarioError(self._unknown(scenario_id)) from None

    def select(
        self,
        ids: list[str] | None = None,
        family: str | None = None,
        category: str | list[str] | None = None,
        role: str | None = None,
    ) -> list[LoadedScenario]:
        """Scenarios matching every filter given; ids keep the caller's order. Several categories select all."""
        if family is not None and str(family).lower() not in SCENARIO_MODELS:
            raise ValueError(f"unknown family {family!r}: expected one of {', '.join(SCENARIO_MODELS)}")
        if role is not None and str(role).lower() not in {r.value for r in Role}:
            raise ValueError(f"unknown role {role!r}: expected trap or control")
        if ids is not None:
            unknown = [sid for sid in ids if sid not in self._by_id]
            if unknown:
                raise ScenarioError(
                    [Problem(file="", field="id", message=self._unknown(sid)) for sid in unknown]
                )
            chosen = [self._by_id[sid] for sid in dict.fromkeys(ids)]
        else:
            chosen = list(self)
        if family is not None:
            chosen = [s for s in chosen if s.scenario.family.value == str(family).lower()]
        if category is not None:
            wanted = {str(c).lower() for c in ([category] if isinstance(category, str) else category)}
            chosen = [s for s in chosen if s.scenario.category.lower() in wanted]
        if role is not None:
            chosen = [s for s in chosen if s.scenario.role.value == str(role).lower()]
        return chosen
