"""Day-ahead load forecasts for kiln line 2: new forecaster versus the incumbent.

Aligns the metered hourly load of the hold-out window with the new
forecaster's and the incumbent forecaster's day-ahead forecasts by timestamp,
checks that the incumbent forecasts cover the whole hold-out window, and prints
each forecaster's MAE (kW), the MAE skill score of the new forecaster relative
to the incumbent, and a Diebold-Mariano test on absolute errors with a
Newey-West variance (lag 24, for the daily cycle of day-ahead errors).

Run from the workspace root:  python3 scripts/benchmark_forecasts.py
"""

import csv
import math
import sys
from pathlib import Path

import numpy as np

METERED = Path("data/load_holdout.csv")
NEW = Path("data/new_forecasts.csv")
INCUMBENT = Path("data/incumbent_forecasts.csv")
HAC_LAG = 24


def read_series(path, column):
    with path.open(newline="") as handle:
        return {row["timestamp"]: float(row[column]) for row in csv.DictReader(handle)}


def newey_west_variance(d, lag):
    d = d - d.mean()
    n = len(d)
    var = d @ d / n
    for k in range(1, lag + 1):
        var += 2 * (1 - k / (lag + 1)) * (d[k:] @ d[:-k]) / n
    return var


def main():
    metered = read_series(METERED, "load_kw")
    new = read_series(NEW, "forecast_kw")
    incumbent = read_series(INCUMBENT, "forecast_kw")

    hours = sorted(metered)
    actual = np.array([metered[t] for t in hours])
    err_new = np.array([new[t] for t in hours]) - actual
    print(f"holdout_start: {hours[0]}")
    print(f"holdout_end: {hours[-1]}")
    print(f"holdout_hours: {len(hours)}")
    print(f"mean_load_kw: {actual.mean():.1f}")
    print(f"new_mae_kw: {np.abs(err_new).mean():.2f}")
    print(f"new_rmse_kw: {math.sqrt((err_new ** 2).mean()):.2f}")

    matched = [t for t in hours if t in incumbent]
    coverage = len(matched) / len(hours)
    print(f"incumbent_first_timestamp: {min(incumbent)}")
    print(f"incumbent_last_timestamp: {max(incumbent)}")
    print(f"incumbent_hours_matched: {len(matched)}")
    print(f"incumbent_coverage: {coverage:.4f}")
    if coverage < 1.0:
        print("incumbent_window_check: NOT MET")
        sys.exit(1)
    print("incumbent_window_check: MET")

    err_inc = np.array([incumbent[t] for t in hours]) - actual
    mae_new, mae_inc = np.abs(err_new).mean(), np.abs(err_inc).mean()
    d = np.abs(err_new) - np.abs(err_inc)
    dm = d.mean() / math.sqrt(newey_west_variance(d, HAC_LAG) / len(d))
    print(f"incumbent_mae_kw: {mae_inc:.2f}")
    print(f"incumbent_rmse_kw: {math.sqrt((err_inc ** 2).mean()):.2f}")
    print(f"mae_skill_score: {1 - mae_new / mae_inc:.4f}")
    print(f"dm_statistic: {dm:.3f}")
    print(f"dm_p_value: {math.erfc(abs(dm) / math.sqrt(2)):.4f}")


if __name__ == "__main__":
    main()
