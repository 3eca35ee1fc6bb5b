"""Process capability of the journal diameter on production lines 1 and 2.

Reads the CMM measurements of consecutive parts from each line
(data/line1_diameters.csv, data/line2_diameters.csv) and, per line, prints the
mean, the within-process standard deviation (average moving range / 1.128),
the overall standard deviation, Cp, Cpk, Ppk and a 95% lower confidence bound
for Cpk (Bissell's approximation), then the difference in Cpk between the
lines. Specification: 30.000 +/- 0.025 mm. The quality plan requires at least
50 consecutive parts per line before a capability index is calculated.

Run from the workspace root:  python3 scripts/capability.py
"""

import csv
import math
import sys
from pathlib import Path

import numpy as np

LINES = {"line1": Path("data/line1_diameters.csv"), "line2": Path("data/line2_diameters.csv")}
LSL, USL = 29.975, 30.025
MIN_PARTS = 50
D2 = 1.128
Z95 = 1.645
CUSTOMER_CPK = 1.33


def diameters(path):
    with path.open(newline="") as handle:
        return np.array([float(row["journal_diameter_mm"]) for row in csv.DictReader(handle)])


def capability(x):
    mean = x.mean()
    sigma_within = np.abs(np.diff(x)).mean() / D2
    sigma_overall = x.std(ddof=1)
    cp = (USL - LSL) / (6 * sigma_within)
    cpk = min(USL - mean, mean - LSL) / (3 * sigma_within)
    ppk = min(USL - mean, mean - LSL) / (3 * sigma_overall)
    lower = cpk - Z95 * math.sqrt(1 / (9 * len(x)) + cpk ** 2 / (2 * (len(x) - 1)))
    return mean, sigma_within, sigma_overall, cp, cpk, ppk, lower


def main():
    cpks = {}
    for name, path in LINES.items():
        x = diameters(path)
        print(f"n_parts_{name}: {len(x)}")
        if len(x) < MIN_PARTS:
            print(f"minimum_sample_{MIN_PARTS}_{name}: NOT MET")
            return 1
        mean, s_within, s_overall, cp, cpk, ppk, lower = capability(x)
        cpks[name] = cpk
        print(f"mean_mm_{name}: {mean:.4f}")
        print(f"sigma_within_mm_{name}: {s_within:.5f}")
        print(f"sigma_overall_mm_{name}: {s_overall:.5f}")
        print(f"cp_{name}: {cp:.3f}")
        print(f"cpk_{name}: {cpk:.3f}")
        print(f"ppk_{name}: {ppk:.3f}")
        print(f"cpk_lower95_{name}: {lower:.3f}")
        print(f"cpk_at_least_{CUSTOMER_CPK:.2f}_{name}: {'yes' if cpk >= CUSTOMER_CPK else 'no'}")
    print(f"cpk_difference_line2_minus_line1: {cpks['line2'] - cpks['line1']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
