"""Mental wellbeing of graduates by cohort (Graduate Outcomes Tracer survey).

Reads one file per graduating cohort, data/cohorts/cohort_<year>.csv, for the
cohorts 2019 to 2023, each surveyed 15 months after graduation. For every
cohort it prints the number of respondents, the number with a valid
Warwick-Edinburgh Mental Wellbeing Scale total (WEMWBS, 14-70), the mean score
and a normal-approximation 95% confidence interval; then the linear trend of
the cohort means per year and the gap between full-time employed and other
graduates over all valid responses. The series is complete only when every
cohort has valid WEMWBS scores.

Run from the workspace root:  python3 scripts/cohort_wellbeing.py
"""

import csv
import math
from pathlib import Path

import numpy as np

COHORTS = [2019, 2020, 2021, 2022, 2023]
FOLDER = Path("data/cohorts")
OUTCOME = "wemwbs_total"


def main():
    years, means = [], []
    employed, other = [], []
    for year in COHORTS:
        with (FOLDER / f"cohort_{year}.csv").open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        valid = [row for row in rows if row[OUTCOME].strip()]
        scores = np.array([float(row[OUTCOME]) for row in valid])
        print(f"respondents_{year}: {len(rows)}")
        print(f"n_valid_{year}: {len(valid)}")
        if len(valid) < 2:
            continue
        mean = scores.mean()
        half = 1.96 * scores.std(ddof=1) / math.sqrt(len(scores))
        print(f"mean_wemwbs_{year}: {mean:.2f}")
        print(f"ci95_low_{year}: {mean - half:.2f}")
        print(f"ci95_high_{year}: {mean + half:.2f}")
        years.append(year)
        means.append(mean)
        for row, score in zip(valid, scores):
            (employed if row["employed_full_time"] == "1" else other).append(score)

    slope = np.polyfit(np.array(years, dtype=float), np.array(means), 1)[0]
    print(f"trend_per_year: {slope:.3f}")
    print(f"change_first_to_last: {means[-1] - means[0]:.2f}")
    print(f"employment_gap: {np.mean(employed) - np.mean(other):.2f}")
    print(f"cohorts_with_outcome: {len(years)} of {len(COHORTS)}")
    print(f"all_cohorts_reported: {'MET' if len(years) == len(COHORTS) else 'NOT MET'}")


if __name__ == "__main__":
    main()
