"""Check that every optimised conformer is a true minimum.

Reads the list of optimised conformers (data/conformer_energies.csv) and the
summaries of their harmonic frequency jobs (data/frequency_summary.csv, one
row per conformer, written by the cluster's post-processing of the frequency
outputs). A conformer passes when its frequency job is present and reports no
imaginary modes. Prints the counts and the lowest real frequency found.

Run from the workspace root:  python3 scripts/validate_minima.py
"""

import csv
from pathlib import Path

ENERGIES = Path("data/conformer_energies.csv")
FREQUENCIES = Path("data/frequency_summary.csv")


def read_rows(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def main():
    conformers = [row["conformer_id"] for row in read_rows(ENERGIES)]
    freq = {row["conformer_id"]: row for row in read_rows(FREQUENCIES)}

    missing = [c for c in conformers if c not in freq]
    imaginary = [c for c in conformers if c in freq and int(freq[c]["n_imaginary"]) > 0]
    lowest = min(float(freq[c]["lowest_frequency_cm1"]) for c in conformers if c in freq)
    passed = len(conformers) - len(missing) - len(imaginary)

    print(f"n_conformers_checked: {len(conformers)}")
    print(f"n_frequency_jobs_missing: {len(missing)}")
    print(f"n_with_imaginary_modes: {len(imaginary)}")
    print(f"n_true_minima: {passed}")
    print(f"lowest_frequency_cm1: {lowest:.1f}")
    print(f"all_true_minima: {'MET' if passed == len(conformers) else 'NOT MET'}")


if __name__ == "__main__":
    main()
