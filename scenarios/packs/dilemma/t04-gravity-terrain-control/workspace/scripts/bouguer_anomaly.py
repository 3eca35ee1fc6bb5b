"""Complete Bouguer anomalies for the Harrow Ridge gravity survey.

Reads the reduced station observations and the survey DEM tile, checks the
DEM against the survey specification (grid spacing of 30 m or finer for the
local terrain correction), then computes for each station:
  free-air anomaly       g_obs - normal gravity (GRS80) + 0.3086 h
  simple Bouguer anomaly free-air - 2 pi G rho h (Bouguer slab, rho = 2670 kg/m3)
  local terrain correction within 500 m of the station, summed over DEM cells
    treated as vertical columns (the cell holding the station is skipped)
  complete Bouguer anomaly = simple Bouguer + local + regional terrain correction
The regional terrain correction beyond 500 m (column tc_regional_mgal) was
supplied by the survey agency. Station results go to outputs/complete_bouguer.csv.

Run from the workspace root:  python3 scripts/bouguer_anomaly.py
"""

import csv
import math
import sys
from pathlib import Path

import numpy as np

STATIONS = Path("data/gravity_stations.csv")
DEM = Path("data/dem_tile.csv")
OUTPUT = Path("outputs/complete_bouguer.csv")
REQUIRED_SPACING_M = 30.0
LATITUDE_DEG = 46.85
DENSITY = 2670.0
G = 6.674e-11
SI_TO_MGAL = 1e5
LOCAL_RADIUS_M = 500.0


def read_rows(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def normal_gravity_mgal(lat_deg):
    s2 = math.sin(math.radians(lat_deg)) ** 2
    return 978032.67715 * (1 + 0.0052790414 * s2 + 0.0000232718 * s2 ** 2 + 0.0000001262 * s2 ** 3)


def grid_spacing(values):
    steps = np.diff(np.unique(values))
    return float(np.median(steps))


def local_terrain_correction(x, y, h, dem_x, dem_y, dem_h, spacing):
    r = np.hypot(dem_x - x, dem_y - y)
    use = (r > spacing / 2) & (r <= LOCAL_RADIUS_M)
    dh = dem_h[use] - h
    rr = r[use]
    area = spacing * spacing
    return float(np.sum(G * DENSITY * area * (1 / rr - 1 / np.sqrt(rr ** 2 + dh ** 2))) * SI_TO_MGAL)


def main():
    stations = read_rows(STATIONS)
    dem = read_rows(DEM)
    dem_x = np.array([float(r["easting_m"]) for r in dem])
    dem_y = np.array([float(r["northing_m"]) for r in dem])
    dem_h = np.array([float(r["elevation_m"]) for r in dem])
    spacing = max(grid_spacing(dem_x), grid_spacing(dem_y))
    print(f"n_stations: {len(stations)}")
    print(f"dem_points: {len(dem)}")
    print(f"dem_spacing_m: {spacing:.2f}")
    print(f"required_dem_spacing_m: {REQUIRED_SPACING_M:.2f}")
    if spacing > REQUIRED_SPACING_M + 1e-6:
        print("dem_spacing_check: NOT MET")
        sys.exit(1)
    print("dem_spacing_check: MET")

    gamma = normal_gravity_mgal(LATITUDE_DEG)
    slab = 2 * math.pi * G * DENSITY * SI_TO_MGAL
    results = []
    for row in stations:
        x, y, h = float(row["easting_m"]), float(row["northing_m"]), float(row["elevation_m"])
        free_air = float(row["g_obs_mgal"]) - gamma + 0.3086 * h
        simple = free_air - slab * h
        tc_local = local_terrain_correction(x, y, h, dem_x, dem_y, dem_h, spacing)
        complete = simple + tc_local + float(row["tc_regional_mgal"])
        results.append((row["station_id"], row["profile"], x, y, free_air, simple, tc_local, complete))

    fa = np.array([r[4] for r in results])
    sb = np.array([r[5] for r in results])
    tc = np.array([r[6] for r in results])
    cb = np.array([r[7] for r in results])
    print(f"mean_free_air_anomaly_mgal: {fa.mean():.3f}")
    print(f"mean_simple_bouguer_anomaly_mgal: {sb.mean():.3f}")
    print(f"mean_local_terrain_correction_mgal: {tc.mean():.3f}")
    print(f"max_local_terrain_correction_mgal: {tc.max():.3f}")
    print(f"mean_complete_bouguer_anomaly_mgal: {cb.mean():.3f}")
    print(f"complete_bouguer_range_mgal: {cb.max() - cb.min():.3f}")

    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    with OUTPUT.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["station_id", "profile", "easting_m", "northing_m", "free_air_mgal",
                         "simple_bouguer_mgal", "tc_local_mgal", "complete_bouguer_mgal"])
        for r in results:
            writer.writerow([r[0], r[1], f"{r[2]:.1f}", f"{r[3]:.1f}"] + [f"{v:.3f}" for v in r[4:]])
    print(f"n_stations_written: {len(results)}")


if __name__ == "__main__":
    main()
