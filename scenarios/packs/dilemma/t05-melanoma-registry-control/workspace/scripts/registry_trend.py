"""Melanoma (ICD-10 C43) incidence trend in the registry area, 2014-2023.

Reads the export of the regional cancer registry's research API
(data/registry_export_c43.csv: annual numbers of new C43 cases and mid-year
population by five-year age group), computes the age-standardised incidence
rate (ASR, per 100 000, direct method with the 2013 European Standard
Population) for each year, and estimates the annual percent change (APC) from
a log-linear regression of the ASR on calendar year.

Run from the workspace root:  python3 scripts/registry_trend.py
"""

import csv
import math
from pathlib import Path

import numpy as np

EXPORT = Path("data/registry_export_c43.csv")
SITE = "C43"
FIRST_YEAR, LAST_YEAR = 2014, 2023
AGE_GROUPS = ["0-4", "5-9", "10-14", "15-19", "20-24", "25-29", "30-34", "35-39", "40-44", "45-49",
              "50-54", "55-59", "60-64", "65-69", "70-74", "75-79", "80-84", "85-89", "90+"]
ESP2013 = [5000, 5500, 5500, 5500, 6000, 6000, 6500, 7000, 7000, 7000,
           7000, 6500, 6000, 5500, 5000, 4000, 2500, 1500, 1000]
T975 = {8: 2.306}  # Student t, 97.5% quantile, for 10 annual points and 2 parameters


def fetch_counts():
    """Return {(year, age_group): (cases, population)} from the registry export."""
    with EXPORT.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["site"] == SITE]
    return {(int(r["year"]), r["age_group"]): (int(r["cases"]), int(r["population"])) for r in rows}


def asr(counts, year):
    total = 0.0
    for group, weight in zip(AGE_GROUPS, ESP2013):
        cases, population = counts[(year, group)]
        total += weight * cases / population
    return total / sum(ESP2013) * 100000


def main():
    counts = fetch_counts()
    years = np.arange(FIRST_YEAR, LAST_YEAR + 1)
    rates = np.array([asr(counts, int(y)) for y in years])
    x = years - years.mean()
    logr = np.log(rates)
    slope = np.sum(x * (logr - logr.mean())) / np.sum(x ** 2)
    resid = logr - logr.mean() - slope * x
    se = math.sqrt(np.sum(resid ** 2) / (len(years) - 2) / np.sum(x ** 2))
    t = T975[len(years) - 2]
    cases_total = sum(c for (y, _), (c, _) in counts.items() if FIRST_YEAR <= y <= LAST_YEAR)

    print(f"years: {len(years)}")
    print(f"cases_total: {cases_total}")
    print(f"asr_{FIRST_YEAR}_per_100k: {rates[0]:.2f}")
    print(f"asr_{LAST_YEAR}_per_100k: {rates[-1]:.2f}")
    print(f"apc_percent: {100 * (math.exp(slope) - 1):.2f}")
    print(f"apc_ci95_low: {100 * (math.exp(slope - t * se) - 1):.2f}")
    print(f"apc_ci95_high: {100 * (math.exp(slope + t * se) - 1):.2f}")


if __name__ == "__main__":
    main()
