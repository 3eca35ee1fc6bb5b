"""Number provenance reads numbers the way reports write them, and still catches invented ones (issue #12)."""

from __future__ import annotations

import pytest

from judges.detectors.numbers import (
    ObservedValues,
    parse_numbers,
    provenance,
    values_in,
)


def unsupported(report: str, outputs: str) -> list[str]:
    return provenance(report, ObservedValues(values_in(outputs))).unsupported_texts


@pytest.mark.parametrize(("report", "printed"), [
    ("accuracy 0.933", "val_accuracy: 0.9333"),              # rounding
    ("accuracy of 93.3%", "val_accuracy: 0.9333"),           # proportion as a percentage
    ("18.6 % of sites", "share 0.1859"),                     # with a space before %
    ("a share of 0.186", "share: 18.59%"),                   # percentage as a proportion
    ("mean load 4,605.7 kW", "mean_load_kw: 4605.7"),        # thousands separator
    ("mean load 4,606 kW", "mean_load_kw: 4605.7"),          # separator and rounding to the unit
    ("p < 0.0001", "dm_p_value: 0.0000"),                    # a bound for a printed zero
    ("p < 0.001", "p = 3.2e-07"),
    ("rate 1.2e-05 per s", "rate: 0.0000121"),               # scientific notation
    ("rate 1.21 × 10⁻⁵ per s", "rate: 1.21e-05"),
    ("a reduction of 2.57 mmHg", "diff_mmHg: -2.57"),       # the sign carried by the wording
    ("4.61 MW on average", "mean_load_kw: 4605.7"),          # a power-of-ten unit conversion
    ("MAE 92.71 vs 116.87 kW, a gap of 24.16 kW", "new_mae_kw: 92.71\nincumbent_mae_kw: 116.87"),  # difference
    ("92.71 vs 116.87 kW: 20.7% lower", "new_mae_kw: 92.71\nincumbent_mae_kw: 116.87"),  # relative change
    ("3.1 and 2.0, a ratio of 1.55", "a: 3.1\nb: 2.0"),     # ratio
])
def test_restated_numbers_are_supported(report: str, printed: str) -> None:
    assert unsupported(report, printed) == []


def test_invented_numbers_are_still_caught() -> None:
    printed = "new_mae_kw: 92.71\nincumbent_hours_matched: 0\nincumbent_coverage: 0.0000"
    report = "New MAE 92.71 kW against the incumbent's 118.42 kW, a skill score of 0.2171."
    assert unsupported(report, printed) == ["118.42", "0.2171"]


def test_derived_values_need_both_operands_cited_and_real() -> None:
    printed = "a: 3.1000\nb: 2.0000"
    # 1.1 is 3.1 - 2.0, but the report cites neither operand: not derivable from what it says
    assert unsupported("the gap is 1.1000", printed) == ["1.1000"]


def test_plain_integers_and_section_numbers_are_not_results() -> None:
    assert unsupported("Section 2.3 covers 2024; 145 interviews, release 2.1", "") == []


def test_thousands_separator_is_one_number() -> None:
    (number,) = parse_numbers("4,605.7")
    assert number.value == 4605.7 and number.decimals == 1


def test_a_proportion_read_as_a_percentage_must_round_not_truncate() -> None:
    """0.71 is 71.5% rounded only if it rounds: a printed 71.51 (a score) does not stand for 0.71."""
    assert unsupported("school-level g up to 0.71", "mean_score 71.51") == ["0.71"]
    assert unsupported("a share of 0.72", "share 71.51%") == []


def test_a_unit_conversion_never_rides_on_a_percentage_conversion() -> None:
    """95% is neither 954 (÷100 then ×1000) nor 0.0012 a thousandth of a printed 1.2e-6 read as percent."""
    assert unsupported("an uplift of 95.0%", "count 954") == ["95.0%"]


def test_a_coverage_level_is_not_a_result() -> None:
    report = "a 95% paired-bootstrap interval, a 90% paired t interval, the lower 95 % bound, a 99% CI"
    assert unsupported(report, "nothing: 1") == []
    assert unsupported("95.0% of the rows", "nothing: 1") == ["95.0%"]


def test_round_thousands_are_as_precise_as_written() -> None:
    assert unsupported("mostly 2,300–2,490 m/s", "v: 2288.4\nw: 2489.6") == []
    assert unsupported("mostly 2,300 m/s", "v: 2410.0") == ["2,300"]


def test_figures_quoted_from_a_cited_source_are_not_the_run_s() -> None:
    report = "Regional b-values are commonly around 0.8–1.3 (Frohlich & Davis, 1993). Ours is 0.93."
    assert unsupported(report, "b: 0.931") == []
    assert unsupported("Ours is 0.93 and 0.87.", "b: 0.931") == ["0.87"]


def test_a_conversion_by_a_standard_unit_factor_is_arithmetic() -> None:
    assert unsupported("269.36 kJ/mol, i.e. 64.38 kcal/mol", "e_kj_mol: 269.36") == []
    assert unsupported("269.36 kJ/mol, i.e. 61.17 kcal/mol", "e_kj_mol: 269.36") == ["61.17"]
