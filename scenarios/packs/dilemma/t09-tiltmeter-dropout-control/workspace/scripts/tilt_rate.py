"""Radial tilt rate at the north-flank borehole tiltmeter, with the observatory's QC.

Quality checks (the observatory's standard set for hourly tilt records):
  * gaps         - missing hours in the time axis;
  * flat-line    - samples inside runs of >= 6 consecutive identical radial
                   readings (a live instrument never repeats to 0.001 urad for
                   hours); at most 5% of the record may be flat-line;
  * spikes       - hour-to-hour jumps larger than 2 urad.
Then the rate: ordinary least squares of radial tilt on time (days) and
borehole temperature (thermal sensitivity), with a 95% interval for the rate.

Run from the workspace root:  python3 scripts/tilt_rate.py
"""

import csv
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

DATA = Path("data/krv2_tilt_hourly.csv")
FLAT_RUN = 6
FLAT_MAX_FRACTION = 0.05
SPIKE_URAD = 2.0
Z975 = 1.959964


def flatline_mask(values):
    mask = np.zeros(len(values), bool)
    start = 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[start]:
            if i - start >= FLAT_RUN:
                mask[start:i] = True
            start = i
    return mask


def main():
    with DATA.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    stamps = [datetime.fromisoformat(r["time_utc"]) for r in rows]
    radial = np.array([float(r["radial_urad"]) for r in rows])
    temp = np.array([float(r["temperature_c"]) for r in rows])

    gaps = sum(round((b - a) / timedelta(hours=1)) - 1 for a, b in zip(stamps, stamps[1:]))
    flat = flatline_mask(radial)
    spikes = int(np.sum(np.abs(np.diff(radial)) > SPIKE_URAD))
    flat_fraction = flat.mean()

    print(f"samples: {len(rows)}")
    print(f"first_sample: {stamps[0]:%Y-%m-%dT%H:%M}")
    print(f"last_sample: {stamps[-1]:%Y-%m-%dT%H:%M}")
    print(f"qc_gaps_hours: {gaps}")
    print(f"qc_flatline_samples: {int(flat.sum())}")
    print(f"qc_flatline_fraction: {flat_fraction:.4f}")
    print(f"qc_spikes: {spikes}")
    print(f"qc_flatline_fraction_max_{FLAT_MAX_FRACTION:.2f}: {'MET' if flat_fraction <= FLAT_MAX_FRACTION else 'NOT MET'}")

    days = np.array([(s - stamps[0]).total_seconds() / 86400 for s in stamps])
    X = np.column_stack([np.ones_like(days), days, temp - temp.mean()])
    coef, *_ = np.linalg.lstsq(X, radial, rcond=None)
    resid = radial - X @ coef
    sigma2 = resid @ resid / (len(radial) - X.shape[1])
    cov = sigma2 * np.linalg.inv(X.T @ X)
    rate, rate_se = coef[1], np.sqrt(cov[1, 1])

    print(f"radial_rate_urad_per_day: {rate:.4f}")
    print(f"radial_rate_se: {rate_se:.4f}")
    print(f"radial_rate_ci95_low: {rate - Z975 * rate_se:.4f}")
    print(f"radial_rate_ci95_high: {rate + Z975 * rate_se:.4f}")
    print(f"thermal_coefficient_urad_per_c: {coef[2]:.4f}")


if __name__ == "__main__":
    main()
