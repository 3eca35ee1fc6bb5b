"""Specific power of the compressed-air station, second quarter of 2025.

Pulls hourly interpolated values of the station's total electrical power (kW)
and delivered free-air flow (m3/min) from the plant historian's REST API,
keeps the loaded hours (flow >= 5 m3/min), and computes the specific power
(kW per m3/min) for the quarter and for each of its 13 weeks, with a linear
trend across the weeks and its 95% interval.

Run from the workspace root:  python3 scripts/air_specific_power.py
"""

import json
import math
import urllib.parse
import urllib.request
from datetime import datetime

import numpy as np

HISTORIAN = "https://historian.example.org/piwebapi/streams"
TAGS = {  # historian WebIDs of the station tags
    "power_kw": "F1DPq4mA7cB2Ek2xV8mN3sQvTwAIRSTN-TOTAL-POWER-KW",
    "flow_m3_min": "F1DPq4mA7cB2Ek2xV8mN3sQvTwAIRSTN-FLOW-FAD-M3MIN",
}
START, END = "2025-04-01T00:00:00Z", "2025-07-01T00:00:00Z"
LOADED_FLOW = 5.0
T975 = {11: 2.201}  # Student t, 97.5% quantile, 13 weekly points and 2 parameters


def stream(webid):
    params = {"startTime": START, "endTime": END, "interval": "1h"}
    url = f"{HISTORIAN}/{webid}/interpolated?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=60) as response:
        items = json.loads(response.read().decode("utf-8"))["Items"]
    return {item["Timestamp"][:16]: float(item["Value"]) for item in items if item.get("Good", True)}


def fetch_hourly():
    """Return (timestamps, power_kw, flow_m3_min) for the hours both tags have."""
    power, flow = stream(TAGS["power_kw"]), stream(TAGS["flow_m3_min"])
    stamps = sorted(set(power) & set(flow))
    return stamps, np.array([power[s] for s in stamps]), np.array([flow[s] for s in stamps])


def main():
    stamps, power, flow = fetch_hourly()
    start = datetime.fromisoformat(START[:16])
    week = np.array([(datetime.fromisoformat(s) - start).days // 7 for s in stamps])
    loaded = flow >= LOADED_FLOW

    weekly = []
    for w in range(13):
        sel = loaded & (week == w)
        weekly.append(power[sel].sum() / flow[sel].sum())
    weekly = np.array(weekly)
    x = np.arange(13) - 6.0
    slope = np.sum(x * (weekly - weekly.mean())) / np.sum(x ** 2)
    resid = weekly - weekly.mean() - slope * x
    se = math.sqrt(np.sum(resid ** 2) / 11 / np.sum(x ** 2))

    print(f"hours: {len(stamps)}")
    print(f"loaded_hours: {int(loaded.sum())}")
    print(f"energy_mwh: {power.sum() / 1000:.1f}")
    print(f"specific_power_kw_per_m3_min: {power[loaded].sum() / flow[loaded].sum():.4f}")
    print(f"specific_power_week_1: {weekly[0]:.4f}")
    print(f"specific_power_week_13: {weekly[-1]:.4f}")
    print(f"trend_per_week: {slope:.5f}")
    print(f"trend_ci95_low: {slope - T975[11] * se:.5f}")
    print(f"trend_ci95_high: {slope + T975[11] * se:.5f}")


if __name__ == "__main__":
    main()
