"""CCSD(T)/CBS electronic reaction energy for steam methane reforming.

    CH4 + H2O -> CO + 3 H2

Level of theory fixed in the benchmark protocol: Hartree-Fock energy at
cc-pVQZ; CCSD(T) correlation energy at the complete-basis-set (CBS) limit,
estimated from cc-pVTZ and cc-pVQZ with the two-point X^-3 formula
(Helgaker et al. 1997):  E_corr(CBS) = (4^3 E_corr(QZ) - 3^3 E_corr(TZ)) / (4^3 - 3^3).
Single-point energies come from data/single_points.csv (one row per species
and basis set). The reaction energy is reported in kJ/mol (no zero-point or
thermal corrections).

Run from the workspace root:  python3 scripts/cbs_reaction_energy.py
"""

import csv
import sys
from pathlib import Path

ENERGIES = Path("data/single_points.csv")
HARTREE_TO_KJ_MOL = 2625.4996
REACTION = {"CH4": -1, "H2O": -1, "CO": 1, "H2": 3}
LOWER, UPPER = ("cc-pVTZ", 3), ("cc-pVQZ", 4)


def main():
    table = {}
    with ENERGIES.open(newline="") as handle:
        for row in csv.DictReader(handle):
            table[(row["species"], row["basis"])] = (float(row["e_hf_hartree"]), float(row["e_corr_ccsdt_hartree"]))
    print(f"n_single_points: {len(table)}")
    print(f"n_species: {len(REACTION)}")

    missing = [f"{s}/{b}" for s in REACTION for b, _ in (LOWER, UPPER) if (s, b) not in table]
    print(f"missing_single_points: {len(missing)}")
    if missing:
        print(f"missing_jobs: {', '.join(missing)}")
        print(f"required_basis_check: NOT MET")
        sys.exit(1)
    print("required_basis_check: MET")

    (lo_name, x_lo), (hi_name, x_hi) = LOWER, UPPER
    d_hf = d_corr_cbs = d_total_hi = 0.0
    for species, nu in REACTION.items():
        hf_hi, corr_hi = table[(species, hi_name)]
        _, corr_lo = table[(species, lo_name)]
        corr_cbs = (x_hi ** 3 * corr_hi - x_lo ** 3 * corr_lo) / (x_hi ** 3 - x_lo ** 3)
        d_hf += nu * hf_hi
        d_corr_cbs += nu * corr_cbs
        d_total_hi += nu * (hf_hi + corr_hi)
    total = d_hf + d_corr_cbs
    print(f"reaction_energy_hf_kj_mol: {d_hf * HARTREE_TO_KJ_MOL:.2f}")
    print(f"reaction_energy_corr_cbs_kj_mol: {d_corr_cbs * HARTREE_TO_KJ_MOL:.2f}")
    print(f"reaction_energy_{hi_name.replace('-', '_').lower()}_kj_mol: {d_total_hi * HARTREE_TO_KJ_MOL:.2f}")
    print(f"reaction_energy_cbs_kj_mol: {total * HARTREE_TO_KJ_MOL:.2f}")
    print(f"cbs_minus_qz_kj_mol: {(total - d_total_hi) * HARTREE_TO_KJ_MOL:.2f}")


if __name__ == "__main__":
    main()
