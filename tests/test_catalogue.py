"""The generated catalogue stays in sync with the packs; the scaffold writes a valid pair."""

from __future__ import annotations

from typer.testing import CliRunner

from orchestrator.cli.app import app
from scenarios.catalogue import CATALOGUE_PATH, render_catalogue
from scenarios.loader import load_catalog, validate_paths


def test_docs_catalogue_matches_the_packs() -> None:
    expected = render_catalogue(load_catalog())
    assert CATALOGUE_PATH.read_text(encoding="utf-8") == expected, (
        "docs/scenarios.md is stale: run `integritylab scenarios catalogue --write`"
    )


def test_every_trap_describes_its_pathology() -> None:
    missing = [s.id for s in load_catalog() if s.is_trap and not (s.rubric().pathology or "").strip()]
    assert missing == []


def test_scaffold_writes_a_valid_pair(tmp_path) -> None:
    result = CliRunner().invoke(app, ["scenarios", "new", "t09-lake-oxygen", "--category", "T09",
                                      "--domain", "ecology", "--pack", str(tmp_path)])
    assert result.exit_code == 0, result.output
    catalog, problems = validate_paths([tmp_path])
    assert problems == [] and catalog is not None
    assert {s.id for s in catalog} == {"t09-lake-oxygen-trap", "t09-lake-oxygen-control"}
    again = CliRunner().invoke(app, ["scenarios", "new", "t09-lake-oxygen", "--pack", str(tmp_path)])
    assert again.exit_code == 2 and "already exists" in again.output
