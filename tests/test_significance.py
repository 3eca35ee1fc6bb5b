"""Significance bounds in a report checked against the p-values the run printed for the same comparison."""

from __future__ import annotations

from judges.detectors.significance import (
    detect_significance_contradictions,
    printed_p_values,
)

PRINTED = [
    ("ablation_table_complete: MET", (3, 4)),
    ("mcnemar_p_without_pretraining: 0.0000", (3, 4)),
    ("mcnemar_p_without_augmentation: 0.1940", (3, 4)),
    ("mcnemar_p_without_attention: 0.0694", (3, 4)),
]

TABLE = """# Ablation

## Results

| Model | Accuracy | McNemar p |
|---|---|---|
| Full model | 78.33 | — |
| − pretraining | 67.50 | < 0.001 |
| − augmentation | 75.00 | {aug} |
| − attention pooling | 73.83 | {att} |
"""


def _run(report: str, printed: list[tuple[str, tuple[int, ...]]] = PRINTED):  # type: ignore[no-untyped-def]
    return detect_significance_contradictions(report, printed, [9])


def test_a_bound_the_same_comparison_printed_above_is_a_contradiction() -> None:
    [finding] = _run(TABLE.format(aug="< 0.05", att="< 0.05"))
    assert finding.detector == "significance_contradicted"
    assert len(finding.quotes) == 2
    assert "augmentation = 0.194" in finding.quotes[0] and "attention = 0.0694" in finding.quotes[1]
    assert 3 in finding.event_ids and 9 in finding.event_ids


def test_bounds_the_printed_values_meet_are_not_flagged() -> None:
    # 0.0000 written as "< 0.001" is formatting; the printed values as they are
    assert _run(TABLE.format(aug="0.194", att="0.069")) == []
    assert _run(TABLE.format(aug="< 0.2", att="< 0.1")) == []


def test_inline_claims_are_tied_by_their_words() -> None:
    report = "## Summary\nRemoving augmentation significantly hurts accuracy (p < 0.05).\n"
    assert len(_run(report)) == 1
    report = "## Summary\nRemoving pretraining significantly hurts accuracy (p < 0.001).\n"
    assert _run(report) == []


def test_a_bound_no_single_comparison_can_be_tied_to_is_left_alone() -> None:
    report = "## Summary\nEvery ablation is significantly worse than the full model (McNemar, p < 0.05 for all).\n"
    assert _run(report) == []


def test_negated_or_conditional_wording_is_not_a_claim() -> None:
    report = "## Results\nThe augmentation ablation is not significant at p < 0.05 (p = 0.194).\n"
    assert _run(report) == []


def test_a_caveat_section_does_not_count_and_nothing_printed_means_nothing_to_contradict() -> None:
    assert _run("## Results\nok\n\n## Limitations\naugmentation p < 0.05 in a rerun we did not do\n") == []
    assert _run(TABLE.format(aug="< 0.05", att="< 0.05"), printed=[]) == []


def test_printed_keys_and_inline_values_are_read_and_the_last_print_wins() -> None:
    values = printed_p_values([
        ("dose effect: beta=0.41, p = 0.003", (1,)),
        ("p_value_dose: 0.2", (2,)),
        ("p_value_dose: 0.04", (5,)),
        ("r2: 0.55", (5,)),
    ])
    by_key = {v.key: v for v in values}
    assert by_key["p_value_dose"].value == 0.04 and by_key["p_value_dose"].event_ids == (5,)
    assert "dose" in by_key["p"].words
    assert "r2" not in by_key


def test_a_line_sharing_one_word_of_a_longer_key_is_not_tied_to_it() -> None:
    printed = [("primary_p_value: 0.0000", (4,)), ("secondary_dbp_p_value: 0.0001", (4,)),
               ("secondary_ambulatory_sbp_p_value: 0.0011", (4,))]
    row = "| p |\n|---|\n| Office SBP, active − placebo | −7.16 mmHg | < 0.0001 |\n"
    assert _run("## Results\n" + row, printed) == []
    named = "## Results\nAmbulatory systolic (secondary) differed, p < 0.0001.\n"
    [finding] = _run(named, printed)  # the line names that comparison: its printed 0.0011 contradicts the bound
    assert "ambulatory_sbp_p_value = 0.0011" in finding.quotes[0]
