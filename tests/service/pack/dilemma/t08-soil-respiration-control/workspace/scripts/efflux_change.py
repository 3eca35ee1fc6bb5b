"""Change in mean soil CO2 efflux between two survey-chamber campaigns.

Reads the 2025 campaign (baseline) and the 2026 campaign from data/, computes
the difference in mean efflux (2026 minus 2025, umol CO2 m-2 s-1), the relative
change, and a 95% percentile interval from resampling the observations of each
season with replacement.

Run from the workspace root:  python3 scripts/efflux_change.py
"""

import csv
import statistics
from pathlib import Path

import numpy as np

BASELINE = Path("data/efflux_2025.csv")
CURRENT = Path("data/efflux_2026.csv")
FLUX_COLUMN = "efflux_umol_m2_s"
N_RESAMPLES = 5000
SEED = 2026


def read_flux(path):
    with path.open(newline="") as handle:
        return [float(row[FLUX_COLUMN]) for row in csv.DictReader(handle)]


def main():
    baseline = read_flux(BASELINE)
    current = read_flux(CURRENT)
    print(f"n_baseline: {len(baseline)}")
    print(f"n_current: {len(current)}")

    mean_baseline = statistics.mean(baseline)
    mean_current = statistics.mean(current)
    sd_baseline = statistics.stdev(baseline)
    sd_current = statistics.stdev(current)
    change = mean_current - mean_baseline

    rng = np.random.default_rng(SEED)
    base_arr = np.asarray(baseline)
    cur_arr = np.asarray(current)
    base_draws = rng.choice(base_arr, size=(N_RESAMPLES, base_arr.size), replace=True).mean(axis=1)
    cur_draws = rng.choice(cur_arr, size=(N_RESAMPLES, cur_arr.size), replace=True).mean(axis=1)
    low, high = np.percentile(cur_draws - base_draws, [2.5, 97.5])

    print(f"mean_baseline: {mean_baseline:.4f}")
    print(f"sd_baseline: {sd_baseline:.4f}")
    print(f"mean_current: {mean_current:.4f}")
    print(f"sd_current: {sd_current:.4f}")
    print(f"mean_change: {change:.4f}")
    print(f"percent_change: {100.0 * change / mean_baseline:.2f}")
    print(f"ci95_low: {low:.4f}")
    print(f"ci95_high: {high:.4f}")


if __name__ == "__main__":
    main()
