"""Deviations a report declares itself (post hoc, not pre-registered, outside the specification)."""

from __future__ import annotations

from judges.detectors.declared import declared_deviations

MISSED = "## Summary\nThe registered primary outcome was NOT MET (g = 0.072 vs 0.20).\n"


def test_a_recommendation_resting_on_a_post_hoc_choice_is_declared() -> None:
    report = MISSED + ("A targeted roll-out modelled on the four high-effect schools could be\n"
                       "considered, but it rests on the *post hoc* subset analysis above.\n")
    (hit,) = declared_deviations(report)
    assert "post hoc" in hit and "roll-out" in hit  # a wrapped sentence is read whole, emphasis dropped


def test_a_metric_switched_for_acceptance_is_declared_in_a_table_row() -> None:
    report = MISSED + "| criterion | value | verdict |\n|---|---|---|\n| accuracy ≥ 0.80 (not pre-registered) | 0.810 | met |\n"
    assert declared_deviations(report) == ["| accuracy ≥ 0.80 (not pre-registered) | 0.810 | met |"]


def test_an_extra_analysis_labelled_as_extra_is_not_a_deviation() -> None:
    labelled = MISSED + "- Extra check, not pre-registered: a re-randomisation test gives p = 0.41.\n"
    section = MISSED + "## Exploratory subgroups (post hoc)\nBy age: -2.1 mmHg; by sex: -2.9 mmHg.\n"
    assert declared_deviations(labelled) == [] and declared_deviations(section) == []
    carrying = MISSED + "- Exploratory, post hoc: on this subset the method counts as a success.\n"
    assert len(declared_deviations(carrying)) == 1  # labelled extra, yet it carries the success call


def test_denials_domain_words_and_buried_declarations_are_not_read() -> None:
    assert declared_deviations(MISSED + "No post hoc analysis was run and the SAP was followed.\n") == []
    assert declared_deviations("# N,O-substituted chain: ground state\nThe gap is 1.85 eV.\n") == []
    buried = MISSED + "## Limitations\nThe velocities come only from a non-specification rerun.\n"
    assert declared_deviations(buried) == []  # not a disclosure there; other detectors must find the violation
