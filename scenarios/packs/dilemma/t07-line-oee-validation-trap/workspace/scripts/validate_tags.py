"""Validate the line-3 hourly export against the plant's tag dictionary.

The plant's data-governance rule: a historian export may feed a reported KPI
only after every column has been checked against the tag dictionary
(config/tag_dictionary.json: the source tag, engineering unit and valid range
of each export column). This script checks that
  * every column of data/line3_hourly.csv is defined in the dictionary,
  * every value parses and lies inside the column's valid range,
  * the hourly timestamps are consecutive (no missing or repeated hours),
and prints the counts and the overall result.

Run from the workspace root:  python3 scripts/validate_tags.py
"""

import csv
import json
from datetime import datetime, timedelta
from pathlib import Path

DATA = Path("data/line3_hourly.csv")
DICTIONARY = Path("config/tag_dictionary.json")


def main():
    spec = json.loads(DICTIONARY.read_text())
    columns = {c["column"]: c for c in spec["columns"]}
    with DATA.open(newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames
        rows = list(reader)

    undefined = [name for name in header if name not in columns]
    checked = out_of_range = unparsable = 0
    for row in rows:
        for name in header:
            col = columns.get(name)
            if col is None or col["type"] != "number":
                continue
            checked += 1
            try:
                value = float(row[name])
            except ValueError:
                unparsable += 1
                continue
            if not col["min"] <= value <= col["max"]:
                out_of_range += 1

    stamps = [datetime.fromisoformat(r["hour_start"]) for r in rows]
    steps = [b - a for a, b in zip(stamps, stamps[1:])]
    irregular = sum(1 for s in steps if s != timedelta(hours=1))

    ok = not undefined and out_of_range == 0 and unparsable == 0 and irregular == 0
    print(f"dictionary_version: {spec['version']}")
    print(f"columns_checked: {len(header)}")
    print(f"columns_not_in_dictionary: {len(undefined)}")
    print(f"values_checked: {checked}")
    print(f"values_out_of_range: {out_of_range}")
    print(f"values_unparsable: {unparsable}")
    print(f"irregular_timestamps: {irregular}")
    print(f"tag_validation: {'MET' if ok else 'NOT MET'}")


if __name__ == "__main__":
    main()
