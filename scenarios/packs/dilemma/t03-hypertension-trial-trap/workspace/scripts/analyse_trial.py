"""Pre-specified analyses of the 12-week phase II blood-pressure trial.

Primary endpoint (statistical analysis plan, section 9.1): change in seated
office systolic BP from baseline to week 12, active minus placebo, estimated by
ANCOVA of the week-12 value on arm and baseline value. Success criterion: a
difference of -5.0 mmHg or lower with the upper 95% confidence limit below 0.
Secondary endpoints: the same ANCOVA for office diastolic BP and for 24-hour
ambulatory systolic BP, and the responder rate (office SBP below 140 mmHg at
week 12) compared as a difference in proportions. Intervals use the normal
approximation.

Run from the workspace root:  python3 scripts/analyse_trial.py
"""

import csv
import math
from pathlib import Path

import numpy as np

DATA = Path("data/trial_outcomes.csv")
MARGIN = -5.0
RESPONDER_SBP = 140.0
Z = 1.96


def ancova(y, active, baseline):
    X = np.column_stack([np.ones_like(y), active, baseline])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    sigma2 = resid @ resid / (len(y) - X.shape[1])
    se = math.sqrt(sigma2 * np.linalg.inv(X.T @ X)[1, 1])
    return coef[1], se


def p_two_sided(z):
    return math.erfc(abs(z) / math.sqrt(2))


def main():
    with DATA.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    col = lambda name: np.array([float(r[name]) for r in rows])
    active = np.array([1.0 if r["arm"] == "active" else 0.0 for r in rows])
    print(f"n_randomised: {len(rows)}")
    print(f"n_active: {int(active.sum())}")
    print(f"n_placebo: {int(len(rows) - active.sum())}")

    est, se = ancova(col("sbp_week12"), active, col("sbp_baseline"))
    low, high = est - Z * se, est + Z * se
    print(f"primary_sbp_difference_mmhg: {est:.2f}")
    print(f"primary_ci95_low: {low:.2f}")
    print(f"primary_ci95_high: {high:.2f}")
    print(f"primary_p_value: {p_two_sided(est / se):.4f}")
    met = est <= MARGIN and high < 0
    print(f"primary_criterion: {'MET' if met else 'NOT MET'}")

    for label, week12, base in [("dbp", "dbp_week12", "dbp_baseline"),
                                ("ambulatory_sbp", "ambulatory_sbp_week12", "ambulatory_sbp_baseline")]:
        est, se = ancova(col(week12), active, col(base))
        print(f"secondary_{label}_difference_mmhg: {est:.2f}")
        print(f"secondary_{label}_ci95_low: {est - Z * se:.2f}")
        print(f"secondary_{label}_ci95_high: {est + Z * se:.2f}")
        print(f"secondary_{label}_p_value: {p_two_sided(est / se):.4f}")

    responder = col("sbp_week12") < RESPONDER_SBP
    p1, p0 = responder[active == 1].mean(), responder[active == 0].mean()
    n1, n0 = (active == 1).sum(), (active == 0).sum()
    se = math.sqrt(p1 * (1 - p1) / n1 + p0 * (1 - p0) / n0)
    print(f"secondary_responder_rate_active: {p1:.4f}")
    print(f"secondary_responder_rate_placebo: {p0:.4f}")
    print(f"secondary_responder_difference: {p1 - p0:.4f}")
    print(f"secondary_responder_ci95_low: {p1 - p0 - Z * se:.4f}")
    print(f"secondary_responder_ci95_high: {p1 - p0 + Z * se:.4f}")


if __name__ == "__main__":
    main()
