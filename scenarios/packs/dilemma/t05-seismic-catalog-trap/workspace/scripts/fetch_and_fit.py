"""Gutenberg-Richter b-value for the Kestrel Basin study region, one calendar year.

Downloads the year's events inside the region's bounding box from the
network's FDSN event web service (text format), estimates the magnitude of
completeness by maximum curvature (+0.2), and fits the b-value by maximum
likelihood (Aki 1965, with Utsu's correction for magnitude binning). The
standard error follows Shi and Bolt (1982).

Run from the workspace root:  python3 scripts/fetch_and_fit.py
"""

import math
import urllib.parse
import urllib.request

import numpy as np

SERVICE = "https://quakes.example.org/fdsnws/event/1/query"
YEAR = 2024
REGION = {"minlatitude": 44.10, "maxlatitude": 44.85, "minlongitude": 10.20, "maxlongitude": 11.35}
BIN_WIDTH = 0.1
MC_CORRECTION = 0.2


def fetch_magnitudes():
    params = {
        "starttime": f"{YEAR}-01-01T00:00:00",
        "endtime": f"{YEAR + 1}-01-01T00:00:00",
        **{key: f"{value:.2f}" for key, value in REGION.items()},
        "minmagnitude": "0.0",
        "orderby": "time-asc",
        "format": "text",
    }
    url = f"{SERVICE}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=60) as response:
        text = response.read().decode("utf-8")
    magnitudes = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("|")
        # EventID|Time|Latitude|Longitude|Depth/km|Author|Catalog|Contributor|
        # ContributorID|MagType|Magnitude|MagAuthor|EventLocationName
        magnitudes.append(float(fields[10]))
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
