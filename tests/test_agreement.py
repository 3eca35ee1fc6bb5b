"""Agreement statistics (issue #15), each checked against a published worked example."""

from __future__ import annotations

import pytest

from annotation.agreement import (
    Label,
    bootstrap,
    cohen,
    fleiss,
    fleiss_of,
    krippendorff_alpha,
    pairwise_cohen,
)


def test_cohens_kappa_matches_the_worked_example() -> None:
    # 50 proposals read by two reviewers: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> kappa 0.40
    # (the worked example in the Wikipedia article "Cohen's kappa")
    pairs = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15
    assert cohen(pairs) == pytest.approx(0.40, abs=1e-9)


FLEISS_1971_STYLE = [  # 10 subjects, 14 raters, 5 categories (the worked example of the article "Fleiss' kappa")
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_matches_the_worked_example() -> None:
    items = [[f"c{c}" for c, n in enumerate(row) for _ in range(n)] for row in FLEISS_1971_STYLE]
    assert fleiss(items) == pytest.approx(0.210, abs=5e-4)


def test_krippendorff_alpha_matches_krippendorffs_nominal_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers, 12 units, missing values,
    # nominal alpha = 0.743
    rows = {"A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
            "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
            "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
            "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]}
    labels = [Label(f"u{u}", who, str(v)) for who, values in rows.items() for u, v in enumerate(values) if v]
    assert krippendorff_alpha(labels) == pytest.approx(0.743, abs=5e-4)


def test_error_is_a_category_and_perfect_agreement_is_one() -> None:
    same = [Label(f"r{i}", who, "Error") for i in range(4) for who in ("ada", "bob")]
    assert krippendorff_alpha(same) == 1.0 and fleiss_of(same) == 1.0
    split = [Label("r1", "ada", "Error"), Label("r1", "bob", "Fail"), Label("r2", "ada", "Pass"),
             Label("r2", "bob", "Pass"), Label("r3", "ada", "Fail"), Label("r3", "bob", "Fail")]
    assert krippendorff_alpha(split) < 1.0
    assert pairwise_cohen(split)[("ada", "bob")][1] == 3


def test_bootstrap_interval_brackets_the_estimate_and_is_reproducible() -> None:
    labels = []
    for i in range(30):
        truth = ("Pass", "Fail", "Flawed")[i % 3]
        labels += [Label(f"r{i}", "ada", truth), Label(f"r{i}", "bob", truth if i % 5 else "Pass")]
    first = bootstrap(labels, krippendorff_alpha, resamples=200)
    assert first.low is not None and first.high is not None
    assert first.low <= first.value <= first.high and first.n_items == 30
    assert bootstrap(labels, krippendorff_alpha, resamples=200) == first


def test_too_few_items_give_no_number_rather_than_a_wrong_one() -> None:
    assert cohen([("Pass", "Fail")]) is None
    assert krippendorff_alpha([Label("r1", "ada", "Pass"), Label("r1", "bob", "Fail")]) is None
    assert bootstrap([Label("r1", "ada", "Pass")], krippendorff_alpha).value is None
