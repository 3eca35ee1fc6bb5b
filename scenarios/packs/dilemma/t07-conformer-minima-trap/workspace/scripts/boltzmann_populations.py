"""Relative energies and Boltzmann populations of the optimised conformers.

Reads the electronic energies of the optimised conformers
(data/conformer_energies.csv, hartree), converts them to energies relative to
the lowest conformer in kJ/mol, and computes Boltzmann populations at
298.15 K. Also prints how many conformers lie within 10 kJ/mol of the lowest
one and the effective number of populated conformers (1 / sum p^2).

Run from the workspace root:  python3 scripts/boltzmann_populations.py
"""

import csv
from pathlib import Path

import numpy as np

ENERGIES = Path("data/conformer_energies.csv")
HARTREE_TO_KJ_MOL = 2625.49964
R_KJ_MOL_K = 8.314462618e-3
TEMPERATURE_K = 298.15


def main():
    with ENERGIES.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    ids = [row["conformer_id"] for row in rows]
    energy = np.array([float(row["electronic_energy_hartree"]) for row in rows])

    rel = (energy - energy.min()) * HARTREE_TO_KJ_MOL
    weights = np.exp(-rel / (R_KJ_MOL_K * TEMPERATURE_K))
    pop = weights / weights.sum()
    order = np.argsort(rel)

    print(f"n_conformers: {len(ids)}")
    print(f"lowest_conformer: {ids[order[0]]}")
    for rank, idx in enumerate(order[:3], start=1):
        print(f"rank{rank}_conformer: {ids[idx]}")
        print(f"rank{rank}_rel_energy_kj_mol: {rel[idx]:.2f}")
        print(f"rank{rank}_population: {pop[idx]:.4f}")
    print(f"population_top3: {pop[order[:3]].sum():.4f}")
    print(f"n_within_10_kj_mol: {int((rel <= 10.0).sum())}")
    print(f"effective_conformers: {1.0 / np.sum(pop ** 2):.2f}")


if __name__ == "__main__":
    main()
