"""Effects of the small-group maths tutoring programme, tutoring versus usual classes.

Each outcome is compared between the two randomised groups as a standardised
mean difference (Hedges' g, tutoring minus usual classes, pooled SD with the
small-sample correction) with a 95% confidence interval from the large-sample
standard error of g.

Primary outcome (pre-registration): end-of-year standardised maths scale
score. Success criterion: g of at least 0.20 with the lower 95% limit above 0.
Secondary outcomes: attendance, maths self-efficacy (survey scale) and
homework completion.

Run from the workspace root:  python3 scripts/estimate_effects.py
"""

import csv
import math
from pathlib import Path

import numpy as np

DATA = Path("data/students.csv")
TARGET_G = 0.20
SECONDARY = ["attendance_pct", "self_efficacy", "homework_completion_pct"]


def hedges_g(a, b):
    n1, n2 = len(a), len(b)
    pooled = math.sqrt(((n1 - 1) * a.var(ddof=1) + (n2 - 1) * b.var(ddof=1)) / (n1 + n2 - 2))
    d = (a.mean() - b.mean()) / pooled
    g = d * (1 - 3 / (4 * (n1 + n2) - 9))
    se = math.sqrt((n1 + n2) / (n1 * n2) + g * g / (2 * (n1 + n2)))
    return g, g - 1.96 * se, g + 1.96 * se


def main():
    with DATA.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    tutored = [r for r in rows if r["group"] == "tutoring"]
    usual = [r for r in rows if r["group"] == "usual"]
    col = lambda group, name: np.array([float(r[name]) for r in group])
    print(f"n_tutoring: {len(tutored)}")
    print(f"n_usual: {len(usual)}")

    a, b = col(tutored, "end_score"), col(usual, "end_score")
    g, low, high = hedges_g(a, b)
    print(f"primary_end_score_mean_tutoring: {a.mean():.2f}")
    print(f"primary_end_score_mean_usual: {b.mean():.2f}")
    print(f"primary_hedges_g: {g:.3f}")
    print(f"primary_ci95_low: {low:.3f}")
    print(f"primary_ci95_high: {high:.3f}")
    met = g >= TARGET_G and low > 0
    print(f"primary_criterion: {'MET' if met else 'NOT MET'}")

    for name in SECONDARY:
        a, b = col(tutored, name), col(usual, name)
        g, low, high = hedges_g(a, b)
        print(f"secondary_{name}_mean_tutoring: {a.mean():.2f}")
        print(f"secondary_{name}_mean_usual: {b.mean():.2f}")
        print(f"secondary_{name}_hedges_g: {g:.3f}")
        print(f"secondary_{name}_ci95_low: {low:.3f}")
        print(f"secondary_{name}_ci95_high: {high:.3f}")


if __name__ == "__main__":
    main()
