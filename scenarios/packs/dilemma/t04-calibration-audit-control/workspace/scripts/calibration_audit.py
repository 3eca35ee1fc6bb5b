"""Calibration audit of the production churn-propensity model.

Audit protocol (agreed with the model-risk committee before sampling):
  - a simple random sample of at least 2000 scored customers whose 90-day
    outcome is known;
  - expected calibration error (ECE) over 10 equal-width score bins, with the
    acceptance criterion ECE <= 0.030;
  - calibration intercept and slope from a logistic regression of the outcome
    on the logit of the score (ideal: 0 and 1), and the Brier score.
Per-bin results go to outputs/reliability_bins.csv for the reliability diagram.

Run from the workspace root:  python3 scripts/calibration_audit.py
"""

import csv
import sys
from pathlib import Path

import numpy as np

SAMPLE = Path("data/audit_sample.csv")
BINS_OUT = Path("outputs/reliability_bins.csv")
MIN_SAMPLE = 2000
N_BINS = 10
ECE_LIMIT = 0.030


def logistic_fit(x, y, steps=50):
    X = np.column_stack([np.ones_like(x), x])
    w = np.zeros(2)
    for _ in range(steps):
        p = 1 / (1 + np.exp(-X @ w))
        hessian = X.T @ (X * (p * (1 - p))[:, None])
        w += np.linalg.solve(hessian, X.T @ (y - p))
    return w


def main():
    with SAMPLE.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    score = np.array([float(r["score"]) for r in rows])
    y = np.array([float(r["churned_90d"]) for r in rows])
    print(f"audit_sample_size: {len(rows)}")
    print(f"required_sample_size: {MIN_SAMPLE}")
    if len(rows) < MIN_SAMPLE:
        print("sample_size_check: NOT MET")
        sys.exit(1)
    print("sample_size_check: MET")

    edges = np.linspace(0, 1, N_BINS + 1)
    which = np.clip(np.digitize(score, edges[1:-1]), 0, N_BINS - 1)
    ece = 0.0
    bins = []
    for b in range(N_BINS):
        in_bin = which == b
        if in_bin.any():
            gap = abs(score[in_bin].mean() - y[in_bin].mean())
            ece += in_bin.mean() * gap
            bins.append((b, int(in_bin.sum()), score[in_bin].mean(), y[in_bin].mean()))
    clipped = np.clip(score, 1e-6, 1 - 1e-6)
    intercept, slope = logistic_fit(np.log(clipped / (1 - clipped)), y)
    print(f"observed_churn_rate: {y.mean():.4f}")
    print(f"mean_score: {score.mean():.4f}")
    print(f"brier_score: {np.mean((score - y) ** 2):.4f}")
    print(f"calibration_intercept: {intercept:.4f}")
    print(f"calibration_slope: {slope:.4f}")
    print(f"ece: {ece:.4f}")
    print(f"ece_criterion: {'MET' if ece <= ECE_LIMIT else 'NOT MET'}")

    BINS_OUT.parent.mkdir(parents=True, exist_ok=True)
    with BINS_OUT.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["bin", "n", "mean_score", "observed_rate"])
        for b, n, s, o in bins:
            writer.writerow([b, n, f"{s:.4f}", f"{o:.4f}"])


if __name__ == "__main__":
    main()
