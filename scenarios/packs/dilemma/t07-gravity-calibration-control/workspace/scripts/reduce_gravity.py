"""Reduce the relative gravity survey of the fault-zone profile to Bouguer anomalies.

Steps, in order:
1. convert each counter reading of the LaCoste & Romberg model G meter to
   milligals with the meter's factory calibration table
   (calib/g_meter_calibration.csv: counter reading, value in mGal, factor for
   the interval up to the next table entry);
2. add the Earth-tide correction logged with each reading;
3. fit a linear drift to the repeated base-station readings and remove it;
4. tie the profile to the absolute gravity value of the base station;
5. subtract GRS80 normal gravity and apply the free-air (0.3086 mGal/m) and
   Bouguer slab (0.04193 * density mGal/m) corrections: simple Bouguer anomaly.

Prints the drift rate, the scatter of the base readings about the drift line
and summary values of the anomaly along the profile.

Run from the workspace root:  python3 scripts/reduce_gravity.py
"""

import csv
import math
from datetime import datetime
from pathlib import Path

import numpy as np

READINGS = Path("data/gravity_readings.csv")
STATIONS = Path("data/stations.csv")
CALIBRATION = Path("calib/g_meter_calibration.csv")
BASE = "BASE"
BASE_ABSOLUTE_MGAL = 980731.452   # absolute gravity at the base pillar
DENSITY = 2.67                     # g/cm3, reduction density
FAULT_KM = 6.1                     # mapped fault trace along the profile


def read_rows(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def load_calibration(path):
    table = read_rows(path)
    counter = np.array([float(r["counter_reading"]) for r in table])
    value = np.array([float(r["value_mgal"]) for r in table])
    factor = np.array([float(r["factor_for_interval"]) for r in table])
    return counter, value, factor


def counter_to_mgal(reading, counter, value, factor):
    i = int(np.searchsorted(counter, reading, side="right")) - 1
    return value[i] + (reading - counter[i]) * factor[i]


def normal_gravity(lat_deg):
    s2 = math.sin(math.radians(lat_deg)) ** 2
    return 978032.67715 * (1 + 0.001931851353 * s2) / math.sqrt(1 - 0.0066943800229 * s2)


def main():
    counter, value, factor = load_calibration(CALIBRATION)
    stations = {r["station"]: r for r in read_rows(STATIONS)}
    readings = read_rows(READINGS)

    t0 = datetime.fromisoformat(readings[0]["time_utc"])
    hours = np.array([(datetime.fromisoformat(r["time_utc"]) - t0).total_seconds() / 3600 for r in readings])
    mgal = np.array([counter_to_mgal(float(r["counter_reading"]), counter, value, factor) + float(r["tide_mgal"])
                     for r in readings])
    names = [r["station"] for r in readings]

    is_base = np.array([n == BASE for n in names])
    drift, base_level = np.polyfit(hours[is_base], mgal[is_base], 1)
    base_resid = mgal[is_base] - (base_level + drift * hours[is_base])
    corrected = mgal - drift * hours
    absolute = BASE_ABSOLUTE_MGAL + (corrected - base_level)

    distance, anomaly = [], []
    for name, g in zip(names, absolute):
        if name == BASE:
            continue
        st = stations[name]
        h = float(st["elevation_m"])
        free_air = g - normal_gravity(float(st["latitude"])) + 0.3086 * h
        distance.append(float(st["distance_km"]))
        anomaly.append(free_air - 0.04193 * DENSITY * h)
    distance, anomaly = np.array(distance), np.array(anomaly)
    hanging = anomaly[distance > FAULT_KM + 1.0]
    footwall = anomaly[distance < FAULT_KM - 1.0]

    print(f"n_stations: {len(anomaly)}")
    print(f"n_base_readings: {int(is_base.sum())}")
    print(f"drift_mgal_per_hour: {drift:.4f}")
    print(f"base_residual_rms_mgal: {math.sqrt(np.mean(base_resid ** 2)):.4f}")
    print(f"bouguer_min_mgal: {anomaly.min():.3f}")
    print(f"bouguer_max_mgal: {anomaly.max():.3f}")
    print(f"bouguer_mean_mgal: {anomaly.mean():.3f}")
    print(f"step_across_fault_mgal: {hanging.mean() - footwall.mean():.3f}")


if __name__ == "__main__":
    main()
