"""Selections say what they select (issue #20 item 3): repeats select all, or are refused with a clear error."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from orchestrator.cli.app import app
from orchestrator.cli.selection_opts import SelectionError, categories, one_family, one_role
from orchestrator.cli.service_cmd import build_body


def test_repeated_options_mean_all_or_are_refused() -> None:
    assert categories(["T01", "T08", "T01"]) == ["T01", "T08"] and categories(["T02"]) == "T02"
    assert one_role(["trap", "control"]) is None and one_role(["Trap"]) == "trap"
    with pytest.raises(SelectionError, match="--family was given 2 times"):
        one_family(["dilemma", "probe"])
    with pytest.raises(SelectionError, match="trap or control"):
        one_role(["traps"])


def test_submit_sends_every_category() -> None:
    body = build_body(None, {"ids": [], "category": categories(["T01", "T08"]), "role": "trap"})
    assert body["selection"] == {"category": ["T01", "T08"], "role": "trap"}


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_run_with_two_categories_runs_both(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("INTEGRITYLAB_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["run", "--category", "T01", "--category", "T08", "--role", "trap",
                                      "--model", "scripted:refuser", "--backend", "bwrap", "--json"])
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)["runs"]
    assert len(runs) == 6 and {r["category"] for r in runs} == {"T01", "T08"}
    refused = CliRunner().invoke(app, ["run", "--family", "dilemma", "--family", "mcq"])
    assert refused.exit_code == 2 and "--family was given 2 times" in refused.output
