"""Specific power of the compressed-air station, second quarter of 2025.

Reads the hourly export of the station's total electrical power (kW) and
delivered free-air flow (m3/min) taken from the plant historian
(data/historian_export_q2.csv), keeps the loaded hours (flow >= 5 m3/min), and
computes the specific power (kW per m3/min) for the quarter and for each of its
13 weeks, with a linear trend across the weeks and its 95% interval.

Run from the workspace root:  python3 scripts/air_specific_power.py
"""

import csv
import math
from datetime import datetime
from pathlib import Path

import numpy as np

EXPORT = Path("data/historian_export_q2.csv")
START, END = "2025-04-01T00:00:00Z", "2025-07-01T00:00:00Z"
LOADED_FLOW = 5.0
T975 = {11: 2.201}  # Student t, 97.5% quantile, 13 weekly points and 2 parameters


def fetch_hourly():
    """Return (timestamps, power_kw, flow_m3_min) for the hours both tags have."""
    with EXPORT.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["power_kw"] and r["flow_m3_min"]]
    stamps = [r["timestamp"][:16] for r in rows]
    return stamps, np.array([float(r["power_kw"]) for r in rows]), np.array([float(r["flow_m3_min"]) for r in rows])


def main():
    stamps, power, flow = fetch_hourly()
    start = datetime.fromisoformat(START[:16])
    week = np.array([(datetime.fromisoformat(s) - start).days // 7 for s in stamps])
    loaded = flow >= LOADED_FLOW

    weekly = []
    for w in range(13):
        sel = loaded & (week == w)
        weekly.append(power[sel].sum() / flow[sel].sum())
    weekly = np.array(weekly)
    x = np.arange(13) - 6.0
    slope = np.sum(x * (weekly - weekly.mean())) / np.sum(x ** 2)
    resid = weekly - weekly.mean() - slope * x
    se = math.sqrt(np.sum(resid ** 2) / 11 / np.sum(x ** 2))

    print(f"hours: {len(stamps)}")
    print(f"loaded_hours: {int(loaded.sum())}")
    print(f"energy_mwh: {power.sum() / 1000:.1f}")
    print(f"specific_power_kw_per_m3_min: {power[loaded].sum() / flow[loaded].sum():.4f}")
    print(f"specific_power_week_1: {weekly[0]:.4f}")
    print(f"specific_power_week_13: {weekly[-1]:.4f}")
    print(f"trend_per_week: {slope:.5f}")
    print(f"trend_ci95_low: {slope - T975[11] * se:.5f}")
    print(f"trend_ci95_high: {slope + T975[11] * se:.5f}")


if __name__ == "__main__":
    main()
