"""Macro-F1 of the distilled intent classifier against the reference model.

Scores the distilled model's predictions and the reference model's released
per-utterance predictions against the gold intents of the BankIntents test
split named in the evaluation plan, after checking that the released
predictions were made on that same split (benchmark, release, split and
utterance coverage). The difference in macro-F1 (distilled minus reference)
gets a 95% percentile interval from paired resampling of utterances.

Run from the workspace root:  python3 scripts/compare_to_reference.py
"""

import csv
import json
import sys
from pathlib import Path

import numpy as np

GOLD = Path("data/test_gold.csv")
DISTILLED = Path("data/distilled_predictions.csv")
REFERENCE = Path("data/reference_predictions.csv")
REFERENCE_CARD = Path("data/reference_card.json")
PLAN = {"benchmark": "BankIntents", "release": "2.1", "split": "test"}
N_RESAMPLES = 2000
SEED = 7321


def read_labels(path, column):
    with path.open(newline="") as handle:
        return {row["utterance_id"]: row[column] for row in csv.DictReader(handle)}


def macro_f1(gold, pred, n_classes):
    """Unweighted mean of per-intent F1; a prediction outside the label set counts as wrong."""
    pred = np.where((pred >= 0) & (pred < n_classes), pred, n_classes)
    confusion = np.bincount(gold * (n_classes + 1) + pred, minlength=n_classes * (n_classes + 1))
    confusion = confusion.reshape(n_classes, n_classes + 1)
    tp = np.diag(confusion[:, :n_classes]).astype(float)
    fn = confusion.sum(axis=1) - tp
    fp = confusion[:, :n_classes].sum(axis=0) - tp
    denom = 2 * tp + fp + fn
    return float(np.mean(np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)))


def main():
    gold = read_labels(GOLD, "intent")
    distilled = read_labels(DISTILLED, "predicted_intent")
    reference = read_labels(REFERENCE, "predicted_intent")
    card = json.loads(REFERENCE_CARD.read_text())

    ids = sorted(gold)
    intents = sorted(set(gold.values()))
    k = len(intents)
    index = {name: i for i, name in enumerate(intents)}
    y = np.array([index[gold[u]] for u in ids])
    d = np.array([index.get(distilled.get(u, ""), -1) for u in ids])
    print(f"n_test: {len(ids)}")
    print(f"n_intents: {k}")
    print(f"distilled_macro_f1: {macro_f1(y, d, k):.4f}")

    coverage = sum(u in reference for u in ids) / len(ids)
    print(f"reference_release: {card.get('release')}")
    print(f"reference_split: {card.get('split')}")
    print(f"reference_coverage: {coverage:.4f}")
    matches = all(str(card.get(key)) == value for key, value in PLAN.items()) and coverage == 1.0
    if not matches:
        print("reference_match: NOT MET")
        sys.exit(1)
    print("reference_match: MET")

    r = np.array([index.get(reference[u], -1) for u in ids])
    f_d, f_r = macro_f1(y, d, k), macro_f1(y, r, k)
    rng = np.random.default_rng(SEED)
    diffs = np.empty(N_RESAMPLES)
    for i in range(N_RESAMPLES):
        pick = rng.integers(0, len(ids), len(ids))
        diffs[i] = macro_f1(y[pick], d[pick], k) - macro_f1(y[pick], r[pick], k)
    low, high = np.percentile(diffs, [2.5, 97.5])
    print(f"reference_macro_f1: {f_r:.4f}")
    print(f"macro_f1_difference: {f_d - f_r:.4f}")
    print(f"ci95_low: {low:.4f}")
    print(f"ci95_high: {high:.4f}")


if __name__ == "__main__":
    main()
