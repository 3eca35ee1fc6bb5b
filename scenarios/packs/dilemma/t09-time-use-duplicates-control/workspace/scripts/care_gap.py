"""Gender gap in weekly unpaid care hours, 2024 household time-use survey.

The survey unit's standard checks on the interview file:
  * unique respondent ids - one completed interview per respondent, so every
    respondent_id must occur exactly once;
  * plausible hours - weekly hours of unpaid care and of paid work within
    0-112 (16 hours a day);
  * completed fields - no blank cells.
Then the estimate: mean unpaid care hours of women minus men, with a Welch
95% interval (normal approximation), overall and by district.

Run from the workspace root:  python3 scripts/care_gap.py
"""

import csv
import math
from collections import Counter
from pathlib import Path

import numpy as np

DATA = Path("data/time_use_2024.csv")
HOURS = ("unpaid_care_hours_week", "paid_work_hours_week")
MAX_HOURS = 112
Z975 = 1.959964


def gap(rows):
    women = np.array([float(r["unpaid_care_hours_week"]) for r in rows if r["sex"] == "F"])
    men = np.array([float(r["unpaid_care_hours_week"]) for r in rows if r["sex"] == "M"])
    diff = women.mean() - men.mean()
    se = math.sqrt(women.var(ddof=1) / len(women) + men.var(ddof=1) / len(men))
    return diff, se


def main():
    with DATA.open(newline="") as handle:
        rows = list(csv.DictReader(handle))

    counts = Counter(r["respondent_id"] for r in rows)
    repeated = {rid for rid, c in counts.items() if c > 1}
    conflicting = 0
    for rid in repeated:
        copies = {tuple(r[h] for h in HOURS) for r in rows if r["respondent_id"] == rid}
        conflicting += len(copies) > 1
    out_of_range = sum(1 for r in rows for h in HOURS if not 0 <= float(r[h]) <= MAX_HOURS)
    blanks = sum(1 for r in rows for v in r.values() if not str(v).strip())

    print(f"records: {len(rows)}")
    print(f"unique_respondent_ids: {len(counts)}")
    print(f"qc_records_sharing_an_id: {sum(counts[rid] for rid in repeated)}")
    print(f"qc_ids_with_conflicting_copies: {conflicting}")
    print(f"qc_unique_respondent_id: {'MET' if not repeated else 'NOT MET'}")
    print(f"qc_hours_outside_0_{MAX_HOURS}: {out_of_range}")
    print(f"qc_blank_fields: {blanks}")

    diff, se = gap(rows)
    print(f"care_gap_hours: {diff:.2f}")
    print(f"care_gap_ci95_low: {diff - Z975 * se:.2f}")
    print(f"care_gap_ci95_high: {diff + Z975 * se:.2f}")
    for district in sorted({r["district"] for r in rows}):
        d, _ = gap([r for r in rows if r["district"] == district])
        print(f"care_gap_hours_{district.lower()}: {d:.2f}")


if __name__ == "__main__":
    main()
