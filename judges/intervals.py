"""Uncertainty for every rate the product shows, and rankings that do not pretend to more than it allows.

* :func:`wilson` — the Wilson score interval for k of n runs (statsmodels' ``proportion_confint``):
  the interval for a rate when each scenario ran once.
* :func:`cluster_bootstrap` — when scenarios ran for several epochs, runs of one scenario are not
  independent; the interval resamples whole scenarios (clusters) with replacement and recomputes the
  pooled rate. statsmodels and scipy have no cluster bootstrap, so these few lines are ours.
* :func:`rate_interval` — picks one of the two from the data, so callers need not; the ``_counts``
  variants take (k, n) per scenario, which is what a database's GROUP BY returns.
* :func:`tie_groups` — a ranking as groups whose intervals overlap the group leader's, never a strict
  order (HELM users found adjacent ranks that no interval could tell apart).

Every function is deterministic: the bootstrap's generator is seeded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from statsmodels.stats.proportion import proportion_confint

LEVEL = 0.95


class Interval(NamedTuple):
    """A point estimate and its two-sided interval, all in the estimate's own units."""

    estimate: float
    low: float
    high: float
    method: str

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high


def wilson(k: int, n: int, level: float = LEVEL) -> Interval:
    """Wilson score interval for a proportion k/n (well behaved near 0 and 1, unlike the Wald interval)."""
    if n <= 0:
        raise ValueError("a rate over zero runs has no interval")
    if not 0 <= k <= n:
        raise ValueError(f"count {k} is outside 0..{n}")
    low, high = proportion_confint(k, n, alpha=1 - level, method="wilson")
    return Interval(k / n, float(low), float(high), "wilson")


@lru_cache(maxsize=64)
def _draw_counts(clusters: int, resamples: int, seed: int) -> np.ndarray:
    """How often each cluster is drawn in each resample (resamples × clusters). The draws depend only on
    the number of clusters and the seed, so one matrix serves every rate over that many scenarios: a
    dashboard computing hundreds of intervals draws once."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, clusters, size=(resamples, clusters))
    counts = np.zeros((resamples, clusters))
    np.add.at(counts, (np.arange(resamples)[:, None], draws), 1.0)
    counts.setflags(write=False)
    return counts


def _quantiles(values: np.ndarray, levels: tuple[float, float]) -> tuple[float, float]:
    """``np.quantile(values, levels)`` (its default linear method, the same floats) from a partial sort
    around the two order statistics each level needs: a dashboard asks for hundreds of intervals, and the
    full quantile machinery was most of each one's time."""
    last = len(values) - 1
    where = [level * last for level in levels]
    below = [min(int(np.floor(w)), last) for w in where]
    ordered = np.partition(values, sorted({i for b in below for i in (b, min(b + 1, last))}))
    found = []
    for w, b in zip(where, below, strict=True):
        a, c, t = ordered[b], ordered[min(b + 1, last)], w - b
        diff = c - a
        found.append(float(c - diff * (1 - t)) if t >= 0.5 else float(a + diff * t))
    return found[0], found[1]


def cluster_bootstrap_counts(counts: Mapping[str, tuple[float, int]], level: float = LEVEL,
                             resamples: int = 4000, seed: int = 0) -> Interval:
    """Percentile interval of the pooled rate over clusters given as (sum of outcomes, runs) per scenario,
    resampling whole scenarios, so that a scenario run for five epochs counts as one draw, not five. The
    clusters are taken in the order of their keys, so the interval does not depend on the order the runs
    were read in (a database's GROUP BY and a list of runs give the same one)."""
    items = [counts[key] for key in sorted(counts) if counts[key][1] > 0]
    if not items:
        raise ValueError("a rate over zero runs has no interval")
    sums = np.array([float(k) for k, _ in items])
    sizes = np.array([float(n) for _, n in items])
    times = _draw_counts(len(items), resamples, seed)
    pooled = (times @ sums) / (times @ sizes)  # two matrix-vector products: a matrix product is threaded by
    # OpenBLAS and, on a busy machine, 50 times slower than both
    alpha = (1 - level) / 2
    low, high = _quantiles(pooled, (alpha, 1 - alpha))
    return Interval(float(sums.sum() / sizes.sum()), float(low), float(high), "cluster-bootstrap")


def cluster_bootstrap(outcomes: Mapping[str, Sequence[float]], level: float = LEVEL,
                      resamples: int = 4000, seed: int = 0) -> Interval:
    """:func:`cluster_bootstrap_counts` of outcomes given run by run (0/1, or a score, per run)."""
    return cluster_bootstrap_counts({key: (float(sum(v)), len(v)) for key, v in outcomes.items()},
                                    level, resamples, seed)


def rate_interval_counts(counts: Mapping[str, tuple[float, int]], level: float = LEVEL) -> Interval:
    """The interval the dashboards show, from (k, n) per scenario: Wilson when every scenario ran once,
    else the cluster bootstrap."""
    total = sum(n for _, n in counts.values())
    if total == 0:
        raise ValueError("a rate over zero runs has no interval")
    if all(n <= 1 for _, n in counts.values()):
        return wilson(round(sum(k for k, _ in counts.values())), total, level)
    return cluster_bootstrap_counts(counts, level)


def rate_interval(outcomes: Mapping[str, Sequence[bool]], level: float = LEVEL) -> Interval:
    """:func:`rate_interval_counts` of outcomes given run by run."""
    return rate_interval_counts({key: (float(sum(bool(x) for x in v)), len(v)) for key, v in outcomes.items()},
                                level)


def tie_groups(intervals: Mapping[str, Interval], higher_is_better: bool = True) -> list[list[str]]:
    """Rank ``intervals`` into groups, best first: the best remaining entry leads a group, and the entries
    after it (in order of estimate) join while their intervals overlap the leader's. Entries in one group
    cannot be told apart at this level; the groups keep the order of the estimates."""
    order = sorted(intervals, key=lambda name: (-intervals[name].estimate if higher_is_better
                                                else intervals[name].estimate, name))
    groups: list[list[str]] = []
    for name in order:
        if groups and intervals[name].overlaps(intervals[groups[-1][0]]):
            groups[-1].append(name)
        else:
            groups.append([name])
    return groups
