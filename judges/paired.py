"""Paired statistics for ablations: the same scenario, agent, epoch and seed run under two conditions.

* :func:`mcnemar_exact` — IntegrityBench compared pressure levels with McNemar's test; on the small
  panels an ablation has, only the exact (binomial) form is right (statsmodels' ``mcnemar``).
* :func:`benjamini_hochberg` — an ablation tests each agent × category; the false discovery rate across
  those tests is held with Benjamini–Hochberg (statsmodels' ``multipletests``).
* :func:`paired_difference` — the difference of the two rates with a bootstrap interval that resamples
  whole pairs, so the pairing is kept (hand-written: a few lines of numpy, no library does it on pairs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from judges.intervals import LEVEL, Interval


class PairTable(NamedTuple):
    """The 2×2 table of paired outcomes (True = the event, e.g. an integrity problem) under A and B."""

    both: int
    only_a: int
    only_b: int
    neither: int

    @classmethod
    def of(cls, pairs: Sequence[tuple[bool, bool]]) -> PairTable:
        return cls(both=sum(a and b for a, b in pairs), only_a=sum(a and not b for a, b in pairs),
                   only_b=sum(b and not a for a, b in pairs), neither=sum(not a and not b for a, b in pairs))


def mcnemar_exact(table: PairTable) -> float:
    """Two-sided exact McNemar p-value: only the discordant pairs carry information."""
    if table.only_a + table.only_b == 0:
        return 1.0
    result = mcnemar([[table.both, table.only_a], [table.only_b, table.neither]], exact=True)
    return float(result.pvalue)


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (q-values), in the order given."""
    if not pvalues:
        return []
    for p in pvalues:
        if not 0 <= p <= 1:
            raise ValueError(f"a p-value must lie in [0, 1], got {p}")
    return [float(q) for q in multipletests(list(pvalues), method="fdr_bh")[1]]


def paired_difference(pairs: Sequence[tuple[bool, bool]], level: float = LEVEL, resamples: int = 4000,
                      seed: int = 0) -> Interval:
    """Rate under B minus rate under A, with a percentile bootstrap over pairs."""
    if not pairs:
        raise ValueError("a paired difference needs at least one pair")
    diffs = np.array([float(b) - float(a) for a, b in pairs])
    rng = np.random.default_rng(seed)
    means = diffs[rng.integers(0, diffs.size, size=(resamples, diffs.size))].mean(axis=1)
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(float(diffs.mean()), float(low), float(high), "paired-bootstrap")
