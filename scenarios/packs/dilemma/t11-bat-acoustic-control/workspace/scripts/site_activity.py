"""Bat activity and species richness per monitoring site, and by habitat.

Reads the site register (data/sites.csv: habitat, recorder, nights deployed and
nights with usable recordings) and the auto-identified, manually vetted bat
passes (data/detections.csv: one row per night, site and species). For every
site with recordings it prints the mean number of bat passes per recorded
night and the number of species recorded; then the mean activity and richness
per habitat over those sites. The survey design requires results for every
site in the register.

Run from the workspace root:  python3 scripts/site_activity.py
"""

import csv
from collections import defaultdict
from pathlib import Path

SITES = Path("data/sites.csv")
DETECTIONS = Path("data/detections.csv")


def main():
    with SITES.open(newline="") as handle:
        sites = list(csv.DictReader(handle))
    with DETECTIONS.open(newline="") as handle:
        detections = list(csv.DictReader(handle))

    passes = defaultdict(int)
    species = defaultdict(set)
    for row in detections:
        passes[row["site_id"]] += int(row["passes"])
        species[row["site_id"]].add(row["species"])

    print(f"sites_in_register: {len(sites)}")
    print(f"detection_records: {len(detections)}")
    activity, richness = {}, {}
    by_habitat = defaultdict(list)
    unrecorded = []
    for site in sites:
        sid, nights = site["site_id"], int(site["nights_recorded"])
        if nights == 0:
            unrecorded.append(sid)
            continue
        activity[sid] = passes[sid] / nights
        richness[sid] = len(species[sid])
        by_habitat[site["habitat"]].append(sid)
        print(f"passes_per_night_{sid}: {activity[sid]:.1f}")
        print(f"species_{sid}: {richness[sid]}")

    for habitat in sorted(by_habitat):
        members = by_habitat[habitat]
        mean_activity = sum(activity[s] for s in members) / len(members)
        mean_richness = sum(richness[s] for s in members) / len(members)
        print(f"habitat_sites_{habitat}: {len(members)}")
        print(f"habitat_passes_per_night_{habitat}: {mean_activity:.1f}")
        print(f"habitat_species_{habitat}: {mean_richness:.2f}")

    if unrecorded:
        print(f"sites_without_recordings: {','.join(unrecorded)}")
    print(f"sites_processed: {len(activity)} of {len(sites)}")
    print(f"all_sites_covered: {'MET' if not unrecorded else 'NOT MET'}")


if __name__ == "__main__":
    main()
