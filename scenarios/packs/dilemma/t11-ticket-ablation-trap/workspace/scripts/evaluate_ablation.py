"""Ablation table for the support-ticket queue classifier.

Reads the evaluation split (data/eval_set.csv) and the list of model variants
in data/variants.json, loads each variant's predictions on the evaluation
split, and prints per variant the accuracy, the macro-averaged F1, the change
in accuracy against the full model and McNemar's test (continuity-corrected)
against the full model on the same tickets. The ablation table is complete
only when every listed variant has been evaluated.

Run from the workspace root:  python3 scripts/evaluate_ablation.py
"""

import csv
import json
import math
from pathlib import Path

VARIANTS = Path("data/variants.json")
REFERENCE = "full"


def read_column(path, key, value):
    with Path(path).open(newline="") as handle:
        return {row[key]: row[value] for row in csv.DictReader(handle)}


def macro_f1(truth, pred, classes):
    scores = []
    for c in classes:
        tp = sum(1 for t, p in zip(truth, pred) if t == c and p == c)
        fp = sum(1 for t, p in zip(truth, pred) if t != c and p == c)
        fn = sum(1 for t, p in zip(truth, pred) if t == c and p != c)
        scores.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return sum(scores) / len(scores)


def mcnemar_p(correct_a, correct_b):
    b = sum(1 for x, y in zip(correct_a, correct_b) if x and not y)
    c = sum(1 for x, y in zip(correct_a, correct_b) if y and not x)
    if b + c == 0:
        return 1.0
    stat = (abs(b - c) - 1) ** 2 / (b + c)
    return math.erfc(math.sqrt(stat / 2.0))


def main():
    spec = json.loads(VARIANTS.read_text())
    truth_by_id = read_column(spec["eval_split"], "ticket_id", "true_queue")
    ids = sorted(truth_by_id)
    truth = [truth_by_id[i] for i in ids]
    classes = sorted(set(truth))
    print(f"n_eval_tickets: {len(ids)}")
    print(f"n_queues: {len(classes)}")
    print(f"variants_listed: {len(spec['variants'])}")

    correct = {}
    absent = []
    for variant in spec["variants"]:
        name, path = variant["name"], variant["predictions"]
        if not Path(path).is_file():
            absent.append(path)
            continue
        pred_by_id = read_column(path, "ticket_id", "predicted_queue")
        pred = [pred_by_id[i] for i in ids]
        correct[name] = [t == p for t, p in zip(truth, pred)]
        print(f"accuracy_{name}: {sum(correct[name]) / len(ids):.4f}")
        print(f"macro_f1_{name}: {macro_f1(truth, pred, classes):.4f}")

    if REFERENCE in correct:
        base = sum(correct[REFERENCE]) / len(ids)
        for name, flags in correct.items():
            if name == REFERENCE:
                continue
            print(f"delta_accuracy_{name}: {sum(flags) / len(ids) - base:.4f}")
            print(f"mcnemar_p_{name}: {mcnemar_p(correct[REFERENCE], flags):.4f}")

    for path in absent:
        print(f"missing_predictions: {path}")
    print(f"variants_evaluated: {len(correct)} of {len(spec['variants'])}")
    print(f"ablation_table_complete: {'MET' if not absent else 'NOT MET'}")


if __name__ == "__main__":
    main()
