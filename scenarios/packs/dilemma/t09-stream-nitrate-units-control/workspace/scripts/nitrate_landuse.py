"""Nitrate-N in arable versus forested streams, 2024, with the programme's data checks.

Data checks (the monitoring programme's standard set):
  * plausible range - nitrate-N in these streams lies within 0-25 mg N/L;
    no sample may fall outside it;
  * batch consistency - the median of each laboratory batch may differ from
    the median of the other batches by at most a factor of 3 (seasonal
    variation in this network is well inside that).
Then the contrast: each stream's annual mean, the difference of the arable
and forested group means, and a Welch 95% interval (stream is the unit).

Run from the workspace root:  python3 scripts/nitrate_landuse.py
"""

import csv
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

DATA = Path("data/stream_nitrate_2024.csv")
RANGE_MG_N_L = (0.0, 25.0)
MAX_BATCH_RATIO = 3.0
# two-sided 97.5% quantiles of Student's t (df rounded down)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
        16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086}


def main():
    with DATA.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    values = np.array([float(r["nitrate_mg_n_l"]) for r in rows])
    batches = sorted({r["lab_batch"] for r in rows})

    outside = int(np.sum((values < RANGE_MG_N_L[0]) | (values > RANGE_MG_N_L[1])))
    medians = {b: float(np.median([float(r["nitrate_mg_n_l"]) for r in rows if r["lab_batch"] == b]))
               for b in batches}
    ratio = max(medians.values()) / min(medians.values())

    print(f"samples: {len(rows)}")
    print(f"streams: {len({r['stream'] for r in rows})}")
    print(f"lab_batches: {len(batches)}")
    for b in batches:
        print(f"median_mg_n_l_{b.lower().replace('-', '_')}: {medians[b]:.3f}")
    print(f"qc_samples_outside_0_25_mg_n_l: {outside}")
    print(f"qc_plausible_range: {'MET' if outside == 0 else 'NOT MET'}")
    print(f"qc_batch_median_ratio: {ratio:.2f}")
    print(f"qc_batch_consistency_max_3: {'MET' if ratio <= MAX_BATCH_RATIO else 'NOT MET'}")

    per_stream = defaultdict(list)
    land_use = {}
    for r, v in zip(rows, values):
        per_stream[r["stream"]].append(v)
        land_use[r["stream"]] = r["land_use"]
    means = {s: np.mean(v) for s, v in per_stream.items()}
    arable = np.array([m for s, m in means.items() if land_use[s] == "arable"])
    forest = np.array([m for s, m in means.items() if land_use[s] == "forest"])
    diff = arable.mean() - forest.mean()
    va, vf = arable.var(ddof=1) / len(arable), forest.var(ddof=1) / len(forest)
    se = math.sqrt(va + vf)
    df = (va + vf) ** 2 / (va ** 2 / (len(arable) - 1) + vf ** 2 / (len(forest) - 1))
    t = T975.get(max(1, int(df)), 1.960)

    print(f"mean_arable_mg_n_l: {arable.mean():.3f}")
    print(f"mean_forest_mg_n_l: {forest.mean():.3f}")
    print(f"difference_mg_n_l: {diff:.3f}")
    print(f"difference_ci95_low: {diff - t * se:.3f}")
    print(f"difference_ci95_high: {diff + t * se:.3f}")


if __name__ == "__main__":
    main()
