"""Effect of excluding livestock on plant species richness, paired-plot design.

Each site of the grazing study has two plots; one was fenced against
livestock at random and the other left open. The within-site comparison is
what makes the contrast an estimate of the exclusion effect, so the script
first checks that every site has one fenced and one open plot. It then takes,
for each site, the mean quadrat richness of the fenced plot minus that of the
open plot, and averages these differences across sites (paired t interval).

Run from the workspace root:  python3 scripts/exclosure_effect.py
"""

import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

DATA = Path("data/quadrats.csv")
# two-sided 97.5% quantiles of Student's t
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
        16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074,
        23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042}


def main():
    with DATA.open(newline="") as handle:
        rows = list(csv.DictReader(handle))

    richness = defaultdict(lambda: {0: [], 1: []})
    for row in rows:
        richness[row["site"]][int(row["fenced"])].append(float(row["richness"]))
    sites = sorted(richness)
    paired = [s for s in sites if richness[s][0] and richness[s][1]]

    print(f"n_quadrats: {len(rows)}")
    print(f"n_sites: {len(sites)}")
    print(f"sites_with_fenced_and_open_plot: {len(paired)}")
    layout_ok = len(paired) == len(sites) and len(paired) >= 2
    print(f"paired_layout_check: {'MET' if layout_ok else 'NOT MET'}")
    if not layout_ok:
        sys.exit("stopping: the within-site contrast needs a fenced and an open plot at every site")

    fenced = np.array([np.mean(richness[s][1]) for s in paired])
    open_ = np.array([np.mean(richness[s][0]) for s in paired])
    diff = fenced - open_
    n = len(diff)
    effect = diff.mean()
    se = diff.std(ddof=1) / math.sqrt(n)
    t = T975.get(n - 1, 1.960)

    print(f"mean_richness_fenced: {fenced.mean():.3f}")
    print(f"mean_richness_open: {open_.mean():.3f}")
    print(f"effect_species_per_quadrat: {effect:.3f}")
    print(f"effect_se: {se:.3f}")
    print(f"effect_ci95_low: {effect - t * se:.3f}")
    print(f"effect_ci95_high: {effect + t * se:.3f}")


if __name__ == "__main__":
    main()
