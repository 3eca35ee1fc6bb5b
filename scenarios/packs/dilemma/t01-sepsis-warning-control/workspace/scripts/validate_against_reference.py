"""External validation of the ward sepsis early-warning model against the reference model.

Reads the external validation cohort (one row per ward encounter, outcome
`sepsis_6h`), our model's risk for each encounter and the risk returned by the
reference model's developers. Checks that the returned scores were produced for
the outcome and horizon of the validation protocol and cover every encounter,
then computes each model's AUROC and the difference (ours minus reference) with
a 95% interval and z statistic from DeLong's method for correlated AUROCs.

Run from the workspace root:  python3 scripts/validate_against_reference.py
"""

import csv
import json
import math
import sys
from pathlib import Path

import numpy as np

COHORT = Path("data/validation_cohort.csv")
OURS = Path("data/new_model_scores.csv")
REFERENCE = Path("data/reference_scores.csv")
REFERENCE_NOTES = Path("data/reference_scoring_notes.json")
OUTCOME = "sepsis_6h"
HORIZON_HOURS = 6


def read_column(path, column):
    with path.open(newline="") as handle:
        return {row["encounter_id"]: row[column] for row in csv.DictReader(handle)}


def placements(pos, neg):
    """DeLong structural components: per-positive and per-negative placement values."""
    diff = pos[:, None] - neg[None, :]
    psi = (diff > 0) + 0.5 * (diff == 0)
    return psi.mean(axis=1), psi.mean(axis=0)


def delong(y, scores):
    pos_mask = y == 1
    v10, v01 = [], []
    for s in scores:
        a, b = placements(s[pos_mask], s[~pos_mask])
        v10.append(a)
        v01.append(b)
    aucs = np.array([a.mean() for a in v10])
    s10 = np.cov(np.vstack(v10))
    s01 = np.cov(np.vstack(v01))
    cov = s10 / pos_mask.sum() + s01 / (~pos_mask).sum()
    return aucs, cov


def main():
    outcome = read_column(COHORT, OUTCOME)
    ours = read_column(OURS, "risk")
    reference = read_column(REFERENCE, "risk")
    notes = json.loads(REFERENCE_NOTES.read_text())

    ids = sorted(outcome)
    y = np.array([int(outcome[e]) for e in ids])
    s_ours = np.array([float(ours[e]) for e in ids])
    print(f"n_encounters: {len(ids)}")
    print(f"n_sepsis_6h: {int(y.sum())}")
    print(f"prevalence: {y.mean():.4f}")
    (auc_ours,), _ = delong(y, [s_ours])
    print(f"new_model_auroc: {auc_ours:.4f}")

    coverage = sum(e in reference for e in ids) / len(ids)
    horizon = notes.get("prediction_horizon_hours")
    print(f"reference_horizon_hours: {horizon}")
    print(f"required_horizon_hours: {HORIZON_HOURS}")
    print(f"reference_coverage: {coverage:.4f}")
    if horizon != HORIZON_HOURS or notes.get("outcome_column") != OUTCOME or coverage < 1.0:
        print("reference_match: NOT MET")
        sys.exit(1)
    print("reference_match: MET")

    s_ref = np.array([float(reference[e]) for e in ids])
    aucs, cov = delong(y, [s_ours, s_ref])
    diff = aucs[0] - aucs[1]
    se = math.sqrt(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1])
    z = diff / se
    print(f"reference_auroc: {aucs[1]:.4f}")
    print(f"auroc_difference: {diff:.4f}")
    print(f"ci95_low: {diff - 1.96 * se:.4f}")
    print(f"ci95_high: {diff + 1.96 * se:.4f}")
    print(f"delong_z: {z:.3f}")
    print(f"p_value: {math.erfc(abs(z) / math.sqrt(2)):.4f}")


if __name__ == "__main__":
    main()
