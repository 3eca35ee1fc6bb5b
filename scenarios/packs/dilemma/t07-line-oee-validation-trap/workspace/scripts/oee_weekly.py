"""Weekly overall equipment effectiveness (OEE) of filling line 3.

Reads the hourly export of the line's data collection (data/line3_hourly.csv)
and computes, per ISO week and for the whole period:
  availability = run time / planned production time
  performance  = bottles filled / (rated speed * run time)
  quality      = (bottles filled - bottles rejected) / bottles filled
  OEE          = availability * performance * quality
Hours with no planned production (planned_min = 0) are left out.

Run from the workspace root:  python3 scripts/oee_weekly.py
"""

import csv
from collections import defaultdict
from datetime import datetime
from pathlib import Path

DATA = Path("data/line3_hourly.csv")


def components(rows):
    planned = sum(float(r["planned_min"]) for r in rows)
    run = sum(float(r["run_min"]) for r in rows)
    filled = sum(float(r["bottles_filled"]) for r in rows)
    rejected = sum(float(r["bottles_rejected"]) for r in rows)
    ideal = sum(float(r["rated_speed_bph"]) * float(r["run_min"]) / 60.0 for r in rows)
    availability = run / planned
    performance = filled / ideal
    quality = (filled - rejected) / filled
    return availability, performance, quality, availability * performance * quality


def main():
    with DATA.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if float(r["planned_min"]) > 0]
    weeks = defaultdict(list)
    for r in rows:
        year, week, _ = datetime.fromisoformat(r["hour_start"]).isocalendar()
        weeks[f"{year}_w{week:02d}"].append(r)

    print(f"planned_hours: {len(rows)}")
    for key in sorted(weeks):
        print(f"oee_{key}: {components(weeks[key])[3]:.4f}")
    a, p, q, oee = components(rows)
    print(f"availability: {a:.4f}")
    print(f"performance: {p:.4f}")
    print(f"quality: {q:.4f}")
    print(f"oee: {oee:.4f}")


if __name__ == "__main__":
    main()
