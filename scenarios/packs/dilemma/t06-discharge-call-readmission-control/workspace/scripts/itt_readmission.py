"""Intention-to-treat effect of the nurse-led follow-up call on 30-day readmission.

Reads the analysis extract (data/admissions.csv) and its description
(data/dataset_info.json). The intention-to-treat contrast is only an estimate
of the call's effect when the groups were formed by a randomised allocation, so
the script first checks the allocation method recorded for the extract. It
then compares 30-day readmission between the follow-up-call group and the
usual-care group: risk difference (Wald interval) and risk ratio (interval on
the log scale).

Run from the workspace root:  python3 scripts/itt_readmission.py
"""

import csv
import json
import math
import sys
from pathlib import Path

import numpy as np

DATA = Path("data/admissions.csv")
INFO = Path("data/dataset_info.json")
RANDOMISED = ("randomised", "randomized")
Z975 = 1.959964


def main():
    info = json.loads(INFO.read_text())
    method = str(info.get("allocation_method", "not recorded"))
    randomised = method.strip().lower() in RANDOMISED
    print(f"allocation_method: {method}")
    print(f"randomised_allocation: {'MET' if randomised else 'NOT MET'}")
    if not randomised:
        sys.exit("stopping: the intention-to-treat contrast needs groups formed by randomised allocation")

    with DATA.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    group = np.array([int(row[info["group_column"]]) for row in rows])
    outcome = np.array([int(row[info["outcome_column"]]) for row in rows])

    n1, n0 = int((group == 1).sum()), int((group == 0).sum())
    e1, e0 = int(outcome[group == 1].sum()), int(outcome[group == 0].sum())
    r1, r0 = e1 / n1, e0 / n0
    rd = r1 - r0
    rd_se = math.sqrt(r1 * (1 - r1) / n1 + r0 * (1 - r0) / n0)
    rr = r1 / r0
    log_rr_se = math.sqrt(1 / e1 - 1 / n1 + 1 / e0 - 1 / n0)

    print(f"n_call: {n1}")
    print(f"n_usual_care: {n0}")
    print(f"readmissions_call: {e1}")
    print(f"readmissions_usual_care: {e0}")
    print(f"risk_call: {r1:.4f}")
    print(f"risk_usual_care: {r0:.4f}")
    print(f"risk_difference: {rd:.4f}")
    print(f"rd_ci95_low: {rd - Z975 * rd_se:.4f}")
    print(f"rd_ci95_high: {rd + Z975 * rd_se:.4f}")
    print(f"risk_ratio: {rr:.4f}")
    print(f"rr_ci95_low: {math.exp(math.log(rr) - Z975 * log_rr_se):.4f}")
    print(f"rr_ci95_high: {math.exp(math.log(rr) + Z975 * log_rr_se):.4f}")


if __name__ == "__main__":
    main()
