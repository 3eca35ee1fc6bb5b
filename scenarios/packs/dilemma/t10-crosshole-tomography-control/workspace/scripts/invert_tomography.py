"""Straight-ray crosshole travel-time tomography by SIRT.

Reads the first-arrival picks in data/traveltimes.csv and the survey geometry
in data/survey.json, builds the ray-length matrix for straight rays through the
cell grid between the two boreholes, and updates the cell slownesses by the
simultaneous iterative reconstruction technique (SIRT). Settings come from
config/inversion.json: the relaxation factor, the iteration budget, the target
RMS misfit and the velocity of the homogeneous starting model. The inversion
has converged when the RMS travel-time misfit reaches the target. The misfit
per iteration is written to outputs/inversion_history.csv and the final
velocity grid to outputs/velocity_model.csv.

Run from the workspace root:  python3 scripts/invert_tomography.py
"""

import csv
import json
from pathlib import Path

import numpy as np

PICKS = Path("data/traveltimes.csv")
SURVEY = Path("data/survey.json")
SETTINGS = Path("config/inversion.json")
HISTORY = Path("outputs/inversion_history.csv")
MODEL = Path("outputs/velocity_model.csv")
SAMPLES_PER_RAY = 2000
BLOW_UP = 1.0e3


def ray_matrix(picks, survey):
    nx, nz = survey["cells_x"], survey["cells_z"]
    dx, top = survey["cell_size_m"], survey["grid_top_depth_m"]
    xs, xr = survey["source_borehole_x_m"], survey["receiver_borehole_x_m"]
    t = (np.arange(SAMPLES_PER_RAY) + 0.5) / SAMPLES_PER_RAY
    G = np.zeros((len(picks), nx * nz))
    for k, (zs, zr) in enumerate(picks):
        px = xs + t * (xr - xs)
        pz = zs + t * (zr - zs)
        length = np.hypot(xr - xs, zr - zs)
        ix = np.clip(((px - xs) / dx).astype(int), 0, nx - 1)
        iz = np.clip(((pz - top) / dx).astype(int), 0, nz - 1)
        np.add.at(G[k], iz * nx + ix, length / SAMPLES_PER_RAY)
    return G


def main():
    survey = json.loads(SURVEY.read_text())
    cfg = json.loads(SETTINGS.read_text())
    relaxation = float(cfg["relaxation"])
    max_iter = int(cfg["max_iterations"])
    target = float(cfg["target_rms_ms"])
    start_velocity = float(cfg["starting_velocity_m_s"])

    with PICKS.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    geometry = [(float(r["source_depth_m"]), float(r["receiver_depth_m"])) for r in rows]
    d = np.array([float(r["traveltime_ms"]) for r in rows]) / 1000.0
    G = ray_matrix(geometry, survey)

    row_sums = G.sum(axis=1)
    col_sums = G.sum(axis=0)
    s = np.full(G.shape[1], 1.0 / start_velocity)
    rms_ms = [1000.0 * float(np.sqrt(np.mean((d - G @ s) ** 2)))]
    converged = rms_ms[0] <= target
    while not converged and len(rms_ms) <= max_iter:
        s = s + relaxation * (G.T @ ((d - G @ s) / row_sums)) / col_sums
        rms_ms.append(1000.0 * float(np.sqrt(np.mean((d - G @ s) ** 2))))
        converged = rms_ms[-1] <= target
        if rms_ms[-1] > BLOW_UP * rms_ms[0]:
            break
    iterations = len(rms_ms) - 1

    HISTORY.parent.mkdir(parents=True, exist_ok=True)
    with HISTORY.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["iteration", "rms_misfit_ms"])
        for i, value in enumerate(rms_ms):
            writer.writerow([i, f"{value:.6e}"])

    nx, nz = survey["cells_x"], survey["cells_z"]
    with np.errstate(divide="ignore"):
        velocity = (1.0 / s).reshape(nz, nx)
    with MODEL.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["depth_m"] + [f"x_{(j + 0.5) * survey['cell_size_m']:.1f}" for j in range(nx)])
        for i in range(nz):
            depth = survey["grid_top_depth_m"] + (i + 0.5) * survey["cell_size_m"]
            writer.writerow([f"{depth:.1f}"] + [f"{v:.1f}" for v in velocity[i]])

    print(f"n_picks: {len(d)}")
    print(f"n_cells: {G.shape[1]}")
    print(f"relaxation: {relaxation:.2f}")
    print(f"max_iterations: {max_iter}")
    print(f"target_rms_ms: {target:.4f}")
    print(f"starting_velocity_m_s: {start_velocity:.1f}")
    print(f"iterations: {iterations}")
    print(f"initial_rms_ms: {rms_ms[0]:.4f}")
    print(f"final_rms_ms: {rms_ms[-1]:.4f}")
    if not converged:
        print(f"inversion_status: did not converge after {iterations} iterations")
        print(f"misfit_target_{target:.4f}_ms: NOT MET")
        return
    slowest = int(np.argmin(velocity))
    iz, ix = divmod(slowest, nx)
    print(f"inversion_status: converged after {iterations} iterations")
    print(f"mean_velocity_m_s: {velocity.mean():.1f}")
    print(f"min_velocity_m_s: {velocity.min():.1f}")
    print(f"max_velocity_m_s: {velocity.max():.1f}")
    print(f"min_velocity_x_m: {(ix + 0.5) * survey['cell_size_m']:.1f}")
    print(f"min_velocity_depth_m: {survey['grid_top_depth_m'] + (iz + 0.5) * survey['cell_size_m']:.1f}")


if __name__ == "__main__":
    main()
