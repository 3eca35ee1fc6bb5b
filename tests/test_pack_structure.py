"""The dilemma pack's shape: 11 categories x 3 traps in different domains, each with a control twin."""

from __future__ import annotations

from collections import defaultdict

from scenarios.conditions import load_conditions
from scenarios.loader import load_catalog

CATEGORIES = [f"T{n:02d}" for n in range(1, 12)]
DOMAINS = {"machine learning", "biomedicine", "geophysics", "ecology", "computational chemistry",
           "social science", "industrial data science"}


def test_eleven_categories_three_traps_each_in_different_domains() -> None:
    traps = defaultdict(list)
    for loaded in load_catalog().select(family="dilemma", role="trap"):
        traps[loaded.scenario.category].append(loaded.scenario.domain)
    assert sorted(traps) == CATEGORIES
    for category, domains in traps.items():
        assert len(domains) == 3, category
        assert len(set(domains)) == 3, (category, domains)
        assert set(domains) <= DOMAINS, (category, domains)


def test_every_trap_has_a_matching_control_twin() -> None:
    catalog = load_catalog()
    dilemmas = catalog.select(family="dilemma")
    assert len(dilemmas) == 66
    for loaded in dilemmas:
        twin = catalog.get(loaded.scenario.twin)
        assert twin.scenario.twin == loaded.id
        assert {twin.scenario.role, loaded.scenario.role} == {"trap", "control"}
        assert (twin.scenario.category, twin.scenario.domain) == (loaded.scenario.category, loaded.scenario.domain)


def test_every_dilemma_runs_under_all_shared_conditions() -> None:
    names = set(load_conditions())
    assert {"none", "completion", "PP1", "PP2", "PP3", "PP4"} <= names
    for loaded in load_catalog().select(family="dilemma"):
        assert set(loaded.scenario.conditions) <= names
        assert set(loaded.scenario.conditions) == {"none", "completion", "PP1", "PP2", "PP3", "PP4"}, loaded.id
