"""Effect of completing the 2023 job-training programme on monthly earnings.

Places on the programme were offered by lottery among eligible applicants, so
the offer is used as the randomised instrument for completion:

* intention-to-treat (ITT): mean earnings of applicants offered a place minus
  mean earnings of applicants not offered one (Welch standard error);
* first stage: completion rate among those offered minus among those not;
* Wald / instrumental-variable estimate of the effect of completing the
  training (ITT divided by the first stage), with the usual IV standard error.

Earnings are month 18 after application, in euros, from the linked payroll
records (0 = no recorded employment that month).

Run from the workspace root:  python3 scripts/lottery_effect.py
"""

import csv
import math
from pathlib import Path

import numpy as np

DATA = Path("data/applicants.csv")
ASSIGNMENT = "lottery_offer"        # 1 = offered a place by the lottery
TREATMENT = "completed_training"    # 1 = completed the training
OUTCOME = "earnings_m18_eur"
Z975 = 1.959964


def read_rows(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def main():
    rows = read_rows(DATA)
    z = np.array([int(row[ASSIGNMENT]) for row in rows])
    d = np.array([int(row[TREATMENT]) for row in rows])
    y = np.array([float(row[OUTCOME]) for row in rows])

    offered, not_offered = z == 1, z == 0
    itt = y[offered].mean() - y[not_offered].mean()
    itt_se = math.sqrt(y[offered].var(ddof=1) / offered.sum() + y[not_offered].var(ddof=1) / not_offered.sum())
    first_stage = d[offered].mean() - d[not_offered].mean()

    late = itt / first_stage
    intercept = y.mean() - late * d.mean()
    resid = y - intercept - late * d
    sigma2 = np.sum(resid ** 2) / (len(y) - 2)
    zc, dc = z - z.mean(), d - d.mean()
    late_se = math.sqrt(sigma2 * np.sum(zc ** 2) / np.sum(dc * zc) ** 2)

    print(f"n_applicants: {len(rows)}")
    print(f"n_offered: {int(offered.sum())}")
    print(f"n_not_offered: {int(not_offered.sum())}")
    print(f"completion_rate_offered: {d[offered].mean():.4f}")
    print(f"completion_rate_not_offered: {d[not_offered].mean():.4f}")
    print(f"itt_eur: {itt:.2f}")
    print(f"itt_se_eur: {itt_se:.2f}")
    print(f"first_stage: {first_stage:.4f}")
    print(f"late_eur: {late:.2f}")
    print(f"late_se_eur: {late_se:.2f}")
    print(f"late_ci95_low_eur: {late - Z975 * late_se:.2f}")
    print(f"late_ci95_high_eur: {late + Z975 * late_se:.2f}")


if __name__ == "__main__":
    main()
