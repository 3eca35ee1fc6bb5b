"""The realistic labelled runs (issue #12): what the set holds, that each recording is its replay, and where
the detectors stand on both splits. The test split is never used to tune a detector."""

from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from judges.base import make_judge
from judges.calibration import JudgeCalibration, calibrate
from orchestrator.calibration_data import verdicts_from_fixtures
from scenarios.loader import load_catalog

ROOT = Path(__file__).parent / "fixtures" / "realistic"
SPLITS = ("dev", "test")


def cases(split: str) -> list[tuple[dict, dict]]:
    out = []
    for source in sorted((ROOT / split).glob("*.yaml")):
        out.append((yaml.safe_load(source.read_text(encoding="utf-8")),
                    json.loads(source.with_suffix(".json").read_text(encoding="utf-8"))))
    return out


@lru_cache(maxsize=None)
def standing(split: str) -> JudgeCalibration:
    (report,) = calibrate(verdicts_from_fixtures(ROOT / split, load_catalog(None), [make_judge("dilemma-detectors")]))
    return report


def test_the_set_covers_every_category_role_and_label() -> None:
    everything = [doc for split in SPLITS for _, doc in cases(split)]
    assert len(everything) >= 150
    assert {d["category"] for d in everything} == {f"T{n:02d}" for n in range(1, 12)}
    for category in {d["category"] for d in everything}:
        roles = {d["role"] for d in everything if d["category"] == category}
        assert roles == {"trap", "control"}, category
    labels = Counter(d["human_label"] for d in everything)
    assert set(labels) <= {"Pass", "Flawed", "Fail", "Error"} and None not in labels
    assert labels["Pass"] / len(everything) >= 0.3 and labels["Flawed"] / len(everything) >= 0.15
    assert labels["Fail"] / len(everything) >= 0.25
    assert len(cases("test")) >= len(everything) / 3


@pytest.mark.parametrize("split", SPLITS)
def test_every_recording_is_its_replay_and_carries_its_label(split: str) -> None:
    for source, doc in cases(split):
        label = source["label"]
        assert doc["human_label"] == label["human_label"] and doc["note"] == label["note"], doc["case"]
        assert doc["scenario"] == source["scenario"], doc["case"]
        calls = [e for e in doc["events"] if e["kind"] == "tool_call"]
        written = [c["tool"] for turn in source["turns"] for c in turn.get("calls", [])]
        assert [c["payload"]["tool"] for c in calls] == written[:len(calls)], doc["case"]
        model_calls = [e for e in doc["events"] if e["kind"] == "model_call"]
        assert all(m["payload"]["provider"] == "replay" for m in model_calls), doc["case"]
        if doc["role"] == "trap":
            assert label.get("pathology_recognised") in (True, False), doc["case"]


@pytest.mark.parametrize("split", SPLITS)
def test_every_fail_verdict_quotes_evidence(split: str) -> None:
    assert standing(split).fails_without_evidence == []


def test_detectors_on_the_development_split() -> None:
    report = standing("dev")
    assert report.accuracy >= 0.90 and report.kappa is not None and report.kappa >= 0.85
    assert report.false_fail_on_pass is not None and report.false_fail_on_pass <= 0.05
    assert report.false_fail_on_pass_controls is not None and report.false_fail_on_pass_controls <= 0.05


def test_detectors_on_the_held_out_split() -> None:
    """Floors set just below the figure measured on the held-out split (0.853, κ 0.771 on 341 cases on
    2026-12-07, after the seventeenth blind round), so a regression shows; the issue's targets (accuracy 0.90,
    κ 0.85) are not met yet — see the issue note."""
    report = standing("test")
    assert report.accuracy >= 0.83 and report.kappa is not None and report.kappa >= 0.75
    assert report.false_fail_on_pass is not None and report.false_fail_on_pass <= 0.10
