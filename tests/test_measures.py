"""Metric definitions against figures printed in the source papers, and their identities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judges.measures import (
    ProbeClassCounts,
    accuracy,
    bootstrap_median_ci,
    cohens_kappa,
    confusion_matrix,
    disclaimer_tax,
    edi,
    edi_ceiling,
    fail_rate,
    ifr_a,
    ifr_i,
    integrity_problem_rate,
    integrity_score,
    undisclosed_fabrication_rate,
)

# --------------------------------------------------------------------------- SciIntegrity-Bench


def test_fail_rate_matches_sciintegrity_bench_headline() -> None:
    assert round(100 * fail_rate(36, 231), 2) == 15.58


def test_fail_rate_of_one_model() -> None:
    assert round(100 * fail_rate(12, 33), 2) == 36.36


def test_undisclosed_fabrication_in_the_t08_ablation() -> None:
    assert round(100 * undisclosed_fabrication_rate(13, 63), 1) == 20.6
    assert round(100 * undisclosed_fabrication_rate(2, 63), 1) == 3.2


def test_integrity_problem_rate_adds_flawed_to_fail() -> None:
    assert integrity_problem_rate(10, 36, 231) == pytest.approx(46 / 231)
    assert integrity_problem_rate(0, 36, 231) == fail_rate(36, 231)


@pytest.mark.parametrize(("n", "total"), [(1, 0), (5, 4), (-1, 10), (1.5, 10)])
def test_rates_refuse_undefined_inputs(n, total) -> None:
    with pytest.raises(ValueError):
        fail_rate(n, total)


# --------------------------------------------------------------------------- TRACES


def test_ifr_identities_on_four_class_counts() -> None:
    counts = ProbeClassCounts(rr=40, ru=20, er=25, eu=15)
    assert counts.total == 100
    assert ifr_a(counts) == pytest.approx(0.40)
    assert ifr_i(counts) == pytest.approx(0.15)
    assert disclaimer_tax(counts) == pytest.approx(0.25)
    assert disclaimer_tax(counts) == pytest.approx(counts.er / counts.total)
    assert ifr_i(counts) <= ifr_a(counts)
    assert ifr_a(counts) + (counts.rr + counts.ru) / counts.total == pytest.approx(1.0)


def test_counts_from_labels_accept_full_and_short_names() -> None:
    labels = ["REFUSED-RECOGNIZED", "RR", "ER", "engaged-unrecognized", "EU", "RU"]
    counts = ProbeClassCounts.from_labels(labels)
    assert counts == ProbeClassCounts(rr=2, ru=1, er=1, eu=2)
    assert ifr_a(counts) == pytest.approx(3 / 6) and ifr_i(counts) == pytest.approx(2 / 6)
    with pytest.raises(ValueError, match="unknown probe class"):
        ProbeClassCounts.from_labels(["ENGAGED"])


def test_all_refusals_give_zero_failure_rates() -> None:
    counts = ProbeClassCounts(rr=7, ru=3)
    assert ifr_a(counts) == ifr_i(counts) == disclaimer_tax(counts) == 0.0
    with pytest.raises(ValueError):
        ifr_a(ProbeClassCounts())


def test_edi_ceiling_of_uniform_probes() -> None:
    assert edi_ceiling(["L3", "L3", "L3", "L3"]) == pytest.approx(1.0)
    assert edi_ceiling(["L1"] * 5) == pytest.approx(0.25)
    assert edi_ceiling(["L1", "L2", "L3"]) == pytest.approx((0.25 + 0.5 + 1.0) / 3)


def test_edi_sums_matched_weights_over_all_details() -> None:
    assert edi(["L3"], 4) == pytest.approx(0.25)
    assert edi([], 4) == 0.0
    assert edi(["L1", "L2"], 2, weights={"L1": 1, "L2": 1, "L3": 1}) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        edi([], 0)
    with pytest.raises(ValueError, match="no weight"):
        edi(["L4"], 1)


def test_bootstrap_median_ci_is_deterministic_and_brackets_the_median() -> None:
    values = [0.10, 0.20, 0.25, 0.30, 0.35, 0.50, 0.55]
    first = bootstrap_median_ci(values, n_resamples=2_000, seed=3)
    again = bootstrap_median_ci(values, n_resamples=2_000, seed=3)
    assert first == again
    assert first.median == pytest.approx(0.30)
    assert first.low <= first.median <= first.high
    assert min(values) <= first.low and first.high <= max(values)
    single = bootstrap_median_ci([0.4])
    assert single == (0.4, 0.4, 0.4)
    with pytest.raises(ValueError):
        bootstrap_median_ci([])


def test_bootstrap_interval_narrows_with_more_data() -> None:
    rng = np.random.default_rng(0)
    small = bootstrap_median_ci(rng.normal(size=10), n_resamples=2_000)
    large = bootstrap_median_ci(rng.normal(size=1_000), n_resamples=2_000)
    assert large.high - large.low < small.high - small.low


# --------------------------------------------------------------------------- IntegrityBench


def test_integrity_score_formula() -> None:
    assert integrity_score(1, 2 / 3, 0.5) == pytest.approx(100 * (1 + 2 / 3 + 0.5) / 3)
    assert integrity_score(0, 0, 0) == 0 and integrity_score(1, 1, 1) == pytest.approx(100)
    with pytest.raises(ValueError):
        integrity_score(1.5, 0, 0)


# --------------------------------------------------------------------------- agreement


def _textbook_raters() -> tuple[list[str], list[str]]:
    """50 items: both yes 20, a yes / b no 5, a no / b yes 10, both no 15 → κ = 0.4."""
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    return a, b


def test_cohens_kappa_textbook_example() -> None:
    a, b = _textbook_raters()
    assert accuracy(a, b) == pytest.approx(0.7)
    assert cohens_kappa(a, b) == pytest.approx(0.4)


def test_cohens_kappa_edge_cases() -> None:
    assert cohens_kappa(["Pass", "Fail", "Flawed"], ["Pass", "Fail", "Flawed"]) == pytest.approx(1.0)
    assert cohens_kappa(["x", "y"], ["y", "x"]) == pytest.approx(-1.0)
    assert math.isnan(cohens_kappa(["Pass"] * 4, ["Pass"] * 4))
    with pytest.raises(ValueError):
        cohens_kappa(["a"], ["a", "b"])


def test_confusion_matrix_rows_follow_the_first_rater() -> None:
    a, b = _textbook_raters()
    matrix = confusion_matrix(a, b, labels=["yes", "no"])
    assert matrix.counts == [[20, 5], [10, 15]]
    assert matrix.cell("no", "yes") == 10
    assert confusion_matrix(a, b).labels == ["no", "yes"]
    with pytest.raises(ValueError, match="labels not in"):
        confusion_matrix(a, b, labels=["yes"])
