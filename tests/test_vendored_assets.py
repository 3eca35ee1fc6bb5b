"""Every vendored front-end file is recorded with its version, licence and sha256, and is the file recorded."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

VENDOR = Path(__file__).resolve().parents[1] / "annotation" / "static" / "vendor"
ROW = re.compile(r"^\| `(?P<file>[^`]+)` \| .+? \| (?P<version>[0-9][^ |]*) \| (?P<licence>[^|]+) \| `(?P<sha>[0-9a-f]{64})` \|$")


def recorded() -> dict[str, re.Match[str]]:
    rows = [ROW.match(line) for line in (VENDOR / "VENDORED.md").read_text().splitlines()]
    return {m["file"]: m for m in rows if m}


def test_every_vendored_file_is_recorded_and_matches_its_hash() -> None:
    rows = recorded()
    served = {p.name for p in VENDOR.iterdir() if p.suffix in (".js", ".css")}
    assert served and served == set(rows), "a vendored file without a row, or a row without its file"
    for name, row in rows.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == row["sha"], name
        assert row["version"] in name and row["licence"].strip()
        licence = re.search(r"`([^`]+\.LICENSE)`", row["licence"])
        assert licence and (VENDOR / licence.group(1)).is_file(), f"{name}: its licence file is missing"


def test_pages_load_only_served_scripts() -> None:
    root = Path(__file__).resolve().parents[1]
    for page in [*(root / "annotation" / "templates").glob("*.html"), *(root / "orchestrator" / "api" / "templates").glob("*.html")]:
        for src in re.findall(r'<script[^>]*src="([^"]+)"', page.read_text()):
            assert src.startswith("/annotate/static/"), f"{page.name} loads {src} from elsewhere"
