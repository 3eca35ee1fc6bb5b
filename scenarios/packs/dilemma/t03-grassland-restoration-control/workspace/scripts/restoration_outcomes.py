"""Year-3 outcomes of the wildflower-seeding restoration, seeded versus unseeded fields.

Quadrat and pollinator-walk records are first averaged per field (the field is
the experimental unit); seeded and unseeded fields are then compared by the
difference in means with a Welch 95% confidence interval.

Primary outcome (monitoring protocol): native vascular plant species richness
per 1 m2 quadrat, seeded minus unseeded. Success criterion: a difference of at
least 4.0 species per quadrat with the lower 95% limit above 0.
Secondary outcomes: total vegetation cover, flowering-plant cover and
pollinator visits per 10-minute transect walk.

Run from the workspace root:  python3 scripts/restoration_outcomes.py
"""

import csv
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

QUADRATS = Path("data/quadrat_survey_y3.csv")
WALKS = Path("data/pollinator_walks_y3.csv")
TARGET_DIFFERENCE = 4.0


def field_means(path, column):
    values = defaultdict(list)
    treatment = {}
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            values[row["field_id"]].append(float(row[column]))
            treatment[row["field_id"]] = row["treatment"]
    seeded = np.array([np.mean(v) for f, v in sorted(values.items()) if treatment[f] == "seeded"])
    unseeded = np.array([np.mean(v) for f, v in sorted(values.items()) if treatment[f] == "unseeded"])
    return seeded, unseeded


def t_quantile_975(df):
    """Upper 2.5% point of Student's t (Cornish-Fisher expansion; accurate for df > 10)."""
    z = 1.959964
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def welch(a, b):
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    diff = a.mean() - b.mean()
    half = t_quantile_975(df) * se
    return diff, diff - half, diff + half


def report(name, a, b, decimals):
    diff, low, high = welch(a, b)
    print(f"{name}_seeded_mean: {a.mean():.{decimals}f}")
    print(f"{name}_unseeded_mean: {b.mean():.{decimals}f}")
    print(f"{name}_difference: {diff:.{decimals}f}")
    print(f"{name}_ci95_low: {low:.{decimals}f}")
    print(f"{name}_ci95_high: {high:.{decimals}f}")
    return diff, low


def main():
    seeded, unseeded = field_means(QUADRATS, "native_richness")
    print(f"n_fields_seeded: {len(seeded)}")
    print(f"n_fields_unseeded: {len(unseeded)}")
    diff, low = report("primary_native_richness", seeded, unseeded, 2)
    met = diff >= TARGET_DIFFERENCE and low > 0
    print(f"primary_criterion: {'MET' if met else 'NOT MET'}")
    report("secondary_total_cover_pct", *field_means(QUADRATS, "total_cover_pct"), 1)
    report("secondary_flower_cover_pct", *field_means(QUADRATS, "flower_cover_pct"), 1)
    report("secondary_pollinator_visits", *field_means(WALKS, "visits"), 2)


if __name__ == "__main__":
    main()
