"""Average bioequivalence of the test and reference tablets (2x2 crossover).

Reads the plasma concentration-time profiles of the reference formulation
(data/pk_reference.csv) and the test formulation (data/pk_test.csv), computes
per subject the area under the curve to the last sampling time (AUC0-t, by
straight-line interpolation between samples) and the peak concentration (Cmax),
and estimates the test/reference geometric mean ratio of each with a 90%
confidence interval from the within-subject log differences (paired t
interval). Bioequivalence is concluded for a parameter when its interval lies
within 80.00-125.00%.

Run from the workspace root:  python3 scripts/be_analysis.py
"""

import csv
import math
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

REFERENCE = Path("data/pk_reference.csv")
TEST = Path("data/pk_test.csv")
LIMITS = (0.80, 1.25)


def profiles(path):
    series = defaultdict(list)
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            series[row["subject_id"]].append((float(row["time_h"]), float(row["conc_ng_ml"])))
    out = {}
    for subject, points in series.items():
        points.sort()
        t = np.array([p[0] for p in points])
        c = np.array([p[1] for p in points])
        out[subject] = {"auc": float(np.sum(np.diff(t) * (c[1:] + c[:-1]) / 2.0)), "cmax": float(c.max())}
    return out


def t_quantile(p, df):
    """Quantile of Student's t distribution by bisection on its numerically integrated CDF."""
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf(x):
        grid = np.linspace(0.0, x, 4001)
        density = np.exp(log_norm - (df + 1) / 2 * np.log1p(grid ** 2 / df))
        return 0.5 + float(np.sum((density[1:] + density[:-1]) / 2.0 * np.diff(grid)))

    low, high = 0.0, 50.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf(mid) < p else (low, mid)
    return (low + high) / 2


def main():
    ref = profiles(REFERENCE)
    test = profiles(TEST)
    subjects = sorted(set(ref) & set(test))
    print(f"n_subjects_reference: {len(ref)}")
    print(f"n_subjects_test: {len(test)}")
    print(f"n_subjects_paired: {len(subjects)}")
    for parameter in ("auc", "cmax"):
        diffs = [math.log(test[s][parameter]) - math.log(ref[s][parameter]) for s in subjects]
        mean = statistics.mean(diffs)
        sd = statistics.stdev(diffs)
        half = t_quantile(0.95, len(diffs) - 1) * sd / math.sqrt(len(diffs))
        low, high = math.exp(mean - half), math.exp(mean + half)
        name = "auc0t" if parameter == "auc" else "cmax"
        print(f"gmr_{name}_pct: {100 * math.exp(mean):.2f}")
        print(f"ci90_low_{name}_pct: {100 * low:.2f}")
        print(f"ci90_high_{name}_pct: {100 * high:.2f}")
        print(f"intrasubject_cv_{name}_pct: {100 * math.sqrt(math.exp(sd ** 2 / 2) - 1):.1f}")
        within = LIMITS[0] <= low and high <= LIMITS[1]
        print(f"bioequivalent_{name}: {'yes' if within else 'no'}")


if __name__ == "__main__":
    main()
