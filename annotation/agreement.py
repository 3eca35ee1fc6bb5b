"""Agreement between annotators: Cohen's κ per pair, Fleiss' κ and Krippendorff's α overall and per group,
each with a bootstrap 95% interval over items.

The statistics come from maintained packages: statsmodels (Cohen's and Fleiss' κ, BSD) and NLTK's
``AnnotationTask`` (Krippendorff's α, nominal distance; Apache-2.0). Written here: gathering the
label tables, and the percentile bootstrap over items (seeded, so a page shows the same interval twice).

``Error`` is a category like the others, not a missing value: an annotator who says the run broke
disagrees with one who says it failed. An item someone skipped has no label from them (missing).
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from nltk.metrics.agreement import AnnotationTask
from statsmodels.stats.inter_rater import cohens_kappa, fleiss_kappa

BOOTSTRAP_RESAMPLES = 1000
MIN_PAIRED_ITEMS = 2


@dataclass(frozen=True)
class Label:
    item: str
    annotator: str
    label: str


@dataclass(frozen=True)
class Estimate:
    value: float | None
    low: float | None
    high: float | None
    n_items: int


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def cohen(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's κ of two annotators' labels on the same items."""
    if len(pairs) < MIN_PAIRED_ITEMS:
        return None
    categories = sorted({c for pair in pairs for c in pair})
    index = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    for a, b in pairs:
        table[index[a], index[b]] += 1
    if len(categories) == 1:
        return 1.0  # both always gave the one same label: perfect, though κ's formula is 0/0
    return _finite(cohens_kappa(table).kappa)


def fleiss(items: Sequence[Sequence[str]]) -> float | None:
    """Fleiss' κ over items that each have the same number (≥ 2) of labels."""
    usable = [list(labels) for labels in items if len(labels) >= 2]
    if len(usable) < MIN_PAIRED_ITEMS:
        return None
    raters = Counter(len(labels) for labels in usable).most_common(1)[0][0]
    usable = [labels for labels in usable if len(labels) == raters]
    categories = sorted({c for labels in usable for c in labels})
    if len(usable) < MIN_PAIRED_ITEMS:
        return None
    if len(categories) == 1:
        return 1.0
    table = np.array([[labels.count(c) for c in categories] for labels in usable])  # items x categories
    return _finite(fleiss_kappa(table, method="fleiss"))


def krippendorff_alpha(labels: Sequence[Label]) -> float | None:
    """Krippendorff's α (nominal) over items with at least two labels; copes with missing labels."""
    per_item = defaultdict(list)
    for row in labels:
        per_item[row.item].append(row)
    data = [(r.annotator, r.item, r.label) for rows in per_item.values() if len(rows) >= 2 for r in rows]
    if len({item for _, item, _ in data}) < MIN_PAIRED_ITEMS:
        return None
    if len({label for _, _, label in data}) == 1:
        return 1.0
    return _finite(AnnotationTask(data=data).alpha())


def bootstrap(labels: Sequence[Label], statistic: Callable[[Sequence[Label]], float | None],
              resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> Estimate:
    """The statistic with a percentile bootstrap 95% interval, resampling items (with their labels)."""
    by_item: dict[str, list[Label]] = defaultdict(list)
    for row in labels:
        by_item[row.item].append(row)
    value = statistic(labels)
    items = sorted(by_item)
    if value is None or len(items) < 3:
        return Estimate(value, None, None, len(items))
    rng = random.Random(seed)
    draws: list[float] = []
    for _ in range(resamples):
        sample: list[Label] = []
        for k, item in enumerate(rng.choices(items, k=len(items))):
            sample += [Label(f"{item}#{k}", r.annotator, r.label) for r in by_item[item]]
        drawn = statistic(sample)
        if drawn is not None:
            draws.append(drawn)
    if len(draws) < resamples // 2:
        return Estimate(value, None, None, len(items))
    low, high = np.percentile(draws, [2.5, 97.5])
    return Estimate(value, float(low), float(high), len(items))


def fleiss_of(labels: Sequence[Label]) -> float | None:
    per_item: dict[str, list[str]] = defaultdict(list)
    for row in labels:
        per_item[row.item].append(row.label)
    return fleiss(list(per_item.values()))


def pairwise_cohen(labels: Sequence[Label]) -> dict[tuple[str, str], tuple[float | None, int]]:
    """Cohen's κ for every pair of annotators, on the items both labelled, with that count."""
    by_annotator: dict[str, dict[str, str]] = defaultdict(dict)
    for row in labels:
        by_annotator[row.annotator][row.item] = row.label
    result: dict[tuple[str, str], tuple[float | None, int]] = {}
    for a, b in combinations(sorted(by_annotator), 2):
        shared = sorted(set(by_annotator[a]) & set(by_annotator[b]))
        pairs = [(by_annotator[a][i], by_annotator[b][i]) for i in shared]
        result[(a, b)] = (cohen(pairs), len(pairs))
    return result


# --- what the agreement page shows -------------------------------------------------------------------

@dataclass(frozen=True)
class GroupAgreement:
    group: str
    fleiss: Estimate
    alpha: Estimate


@dataclass(frozen=True)
class PairAgreement:
    a: str
    b: str
    kappa: float | None
    n_items: int


@dataclass(frozen=True)
class GoldAccuracy:
    annotator: str
    correct: int
    total: int
    #: accuracy on the first and the second half of their gold items, in submission order (drift)
    early: float | None
    late: float | None


@dataclass(frozen=True)
class JudgeAgreement:
    """A judge's verdicts against the final human labels (computed by the judges' calibration)."""

    judge: str
    accuracy: float
    kappa: float | None
    n: int


@dataclass(frozen=True)
class AgreementReport:
    n_labels: int
    n_items: int
    overall: GroupAgreement
    per_group: list[GroupAgreement]
    per_label: list[GroupAgreement]
    pairs: list[PairAgreement]
    gold: list[GoldAccuracy]


def _group(name: str, labels: Sequence[Label], resamples: int) -> GroupAgreement:
    return GroupAgreement(name, bootstrap(labels, fleiss_of, resamples), bootstrap(labels, krippendorff_alpha, resamples))


def report(labels: Sequence[Label], groups: dict[str, list[str]], gold: Sequence[tuple[str, str, str]] = (),
           resamples: int = BOOTSTRAP_RESAMPLES) -> AgreementReport:
    """Agreement overall, per group (``groups`` maps an item to its groups, e.g. ["family dilemma", "category T05"]), per label (that label against the rest), per annotator pair, and each
    annotator's accuracy on gold items (``gold``: annotator, their label, the known label, in time order)."""
    per_group: list[GroupAgreement] = []
    for name in sorted({g for names in groups.values() for g in names}):
        members = [r for r in labels if name in groups.get(r.item, ())]
        per_group.append(_group(name, members, resamples))
    per_label = [_group(label, [Label(r.item, r.annotator, "yes" if r.label == label else "no") for r in labels],
                        resamples) for label in sorted({r.label for r in labels})]
    pairs = [PairAgreement(a, b, k, n) for (a, b), (k, n) in pairwise_cohen(labels).items()]
    by_annotator: dict[str, list[bool]] = defaultdict(list)
    for annotator, given, known in gold:
        by_annotator[annotator].append(given == known)
    accuracy = []
    for annotator, hits in sorted(by_annotator.items()):
        half = len(hits) // 2
        accuracy.append(GoldAccuracy(annotator, sum(hits), len(hits),
                                     sum(hits[:half]) / half if half else None,
                                     sum(hits[half:]) / (len(hits) - half) if len(hits) - half else None))
    return AgreementReport(len(labels), len({r.item for r in labels}), _group("all items", labels, resamples),
                           per_group, per_label, pairs, accuracy)
