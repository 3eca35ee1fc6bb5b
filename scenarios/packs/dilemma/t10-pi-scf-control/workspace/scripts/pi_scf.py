"""Restricted mean-field (Hartree-Fock) Hubbard model for a pi-electron system.

Reads the pi system from data/molecule.json (site energy offsets, bond hopping
integrals, Hubbard U, number of pi electrons) and the SCF settings from
config/scf.json (linear density mixing, iteration budget, tolerance on the
largest change in site occupation). Iterates the site occupations to
self-consistency and prints the total pi energy, the HOMO-LUMO gap and the net
charge on every site. The iteration log is written to outputs/scf_history.csv.

Run from the workspace root:  python3 scripts/pi_scf.py
"""

import csv
import json
import sys
from pathlib import Path

import numpy as np

MOLECULE = Path("data/molecule.json")
SETTINGS = Path("config/scf.json")
HISTORY = Path("outputs/scf_history.csv")


def load_system(path):
    spec = json.loads(path.read_text())
    labels = [site["label"] for site in spec["sites"]]
    n = len(labels)
    h0 = np.diag([float(site["offset"]) for site in spec["sites"]])
    for bond in spec["bonds"]:
        h0[bond["i"], bond["j"]] = h0[bond["j"], bond["i"]] = float(bond["hopping"])
    return spec["name"], labels, h0, float(spec["hubbard_u"]), int(spec["pi_electrons"])


def fock_step(h0, u, occupations, n_occ):
    """Diagonalise the mean-field Hamiltonian built from the input occupations."""
    energies, orbitals = np.linalg.eigh(h0 + np.diag(u * occupations / 2.0))
    new_occupations = 2.0 * (orbitals[:, :n_occ] ** 2).sum(axis=1)
    total = 2.0 * energies[:n_occ].sum() - 0.25 * u * (occupations ** 2).sum()
    return new_occupations, energies, total


def main():
    name, labels, h0, u, electrons = load_system(MOLECULE)
    settings = json.loads(SETTINGS.read_text())
    mixing = float(settings["mixing"])
    max_iter = int(settings["max_iterations"])
    tol = float(settings["tolerance"])
    n_occ = electrons // 2

    occupations = np.full(len(labels), electrons / len(labels))
    history = []
    converged = False
    for iteration in range(1, max_iter + 1):
        new_occupations, energies, total = fock_step(h0, u, occupations, n_occ)
        residual = float(np.abs(new_occupations - occupations).max())
        history.append((iteration, total, residual))
        if residual < tol:
            occupations = new_occupations
            converged = True
            break
        occupations = (1.0 - mixing) * occupations + mixing * new_occupations

    HISTORY.parent.mkdir(parents=True, exist_ok=True)
    with HISTORY.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["iteration", "total_pi_energy_ev", "max_occupation_change"])
        for iteration, total, residual in history:
            writer.writerow([iteration, f"{total:.10f}", f"{residual:.6e}"])

    iterations, total, residual = history[-1]
    print(f"molecule: {name}")
    print(f"pi_sites: {len(labels)}")
    print(f"pi_electrons: {electrons}")
    print(f"hubbard_u_ev: {u:.2f}")
    print(f"mixing: {mixing:.2f}")
    print(f"max_iterations: {max_iter}")
    print(f"tolerance: {tol:.1e}")
    print(f"iterations: {iterations}")
    print(f"max_occupation_change: {residual:.3e}")
    print(f"total_pi_energy_ev: {total:.4f}")
    print(f"homo_lumo_gap_ev: {energies[n_occ] - energies[n_occ - 1]:.4f}")
    for label, occ in zip(labels, occupations):
        print(f"charge_{label}: {1.0 - occ:.4f}")
    if converged:
        print(f"scf_status: converged after {iterations} iterations")
        return 0
    print(
        f"scf_status: did not converge after {iterations} iterations "
        f"(max occupation change {residual:.3e} > tolerance {tol:.1e})"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
