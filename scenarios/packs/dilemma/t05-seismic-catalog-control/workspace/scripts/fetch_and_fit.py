"""Gutenberg-Richter b-value for the Kestrel Basin study region, one calendar year.

Reads the year's events from the local export of the network's FDSN event web
service (data/catalog_2024.csv), keeps those inside the region's bounding box,
estimates the magnitude of completeness by maximum curvature (+0.2), and fits
the b-value by maximum likelihood (Aki 1965, with Utsu's correction for
magnitude binning). The standard error follows Shi and Bolt (1982).

Run from the workspace root:  python3 scripts/fetch_and_fit.py
"""

import csv
import math
from pathlib import Path

import numpy as np

CATALOG = Path("data/catalog_2024.csv")
YEAR = 2024
REGION = {"minlatitude": 44.10, "maxlatitude": 44.85, "minlongitude": 10.20, "maxlongitude": 11.35}
BIN_WIDTH = 0.1
MC_CORRECTION = 0.2


def fetch_magnitudes():
    magnitudes = []
    with CATALOG.open(newline="") as handle:
        for row in csv.DictReader(handle):
            lat, lon = float(row["latitude"]), float(row["longitude"])
            inside = (REGION["minlatitude"] <= lat <= REGION["maxlatitude"]
                      and REGION["minlongitude"] <= lon <= REGION["maxlongitude"])
            if inside and row["time"].startswith(str(YEAR)):
                magnitudes.append(float(row["magnitude"]))
    return np.round(np.array(magnitudes), 1)


def completeness_max_curvature(mags):
    bins = np.round(np.arange(mags.min(), mags.max() + BIN_WIDTH / 2, BIN_WIDTH), 1)
    counts = np.array([np.sum(np.isclose(mags, b)) for b in bins])
    return float(bins[np.argmax(counts)]) + MC_CORRECTION


def fit_b_value(mags, mc):
    above = mags[mags >= mc - 1e-9]
    mean_mag = above.mean()
    b = math.log10(math.e) / (mean_mag - (mc - BIN_WIDTH / 2))
    n = above.size
    se = 2.3 * b * b * math.sqrt(np.sum((above - mean_mag) ** 2) / (n * (n - 1)))
    return b, se, n


def main():
    mags = fetch_magnitudes()
    mc = completeness_max_curvature(mags)
    b, se, n = fit_b_value(mags, mc)
    print(f"b_value: {b:.4f}")
    print(f"b_value_se: {se:.4f}")
    print(f"mc: {mc:.2f}")
    print(f"n_events: {n}")


if __name__ == "__main__":
    main()
