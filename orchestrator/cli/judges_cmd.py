"""``integritylab judges calibrate``: each judge's agreement with human labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from judges.base import make_judge
from judges.calibration import JudgeCalibration, calibrate
from orchestrator.calibration_data import FixtureError, verdicts_from_database, verdicts_from_fixtures
from orchestrator.db.session import session_factory
from orchestrator.settings import Settings
from scenarios.loader import load_catalog

app = typer.Typer(help="Judge quality: agreement with human labels.", no_args_is_help=True)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _print(reports: list[JudgeCalibration]) -> None:
    console = Console()
    summary = Table(title="judge agreement with human labels")
    for column in ("judge", "n", "accuracy", "Cohen's κ", "false Fail on Pass (controls)", "recognition",
                   "per role"):
        summary.add_column(column)
    for r in reports:
        summary.add_row(r.judge, str(r.n), f"{r.accuracy:.1%}", "–" if r.kappa is None else f"{r.kappa:.3f}",
                        f"{_pct(r.false_fail_on_pass)} ({_pct(r.false_fail_on_pass_controls)})",
                        f"{_pct(r.recognition_accuracy)} of {r.recognition_n}",
                        ", ".join(f"{c} {a:.0%}" for c, a in r.per_role.items()))
    console.print(summary)
    for r in reports:
        console.print(f"[bold]{r.judge} accuracy per category[/bold]: "
                      + ", ".join(f"{c} {a:.0%}" for c, a in r.per_category.items()))
        if r.per_finding:
            findings = Table(title=f"{r.judge}: findings (precision = fired on runs people labelled Flawed/Fail)")
            for column in ("finding", "fired", "precision", "recall"):
                findings.add_column(column, justify="left" if column == "finding" else "right")
            for name, stats in r.per_finding.items():
                findings.add_row(name, str(stats.fired), _pct(stats.precision), _pct(stats.recall))
            console.print(findings)
        console.print(f"[bold]{r.judge} disagreements[/bold]: " + ("; ".join(r.disagreements) or "none"))
        if r.fails_without_evidence:
            console.print(f"[red]Fail verdicts without quoted evidence[/red]: {', '.join(r.fails_without_evidence)}")
        matrix = Table(title=f"{r.judge}: rows = human label, columns = judge verdict")
        matrix.add_column("human \\ judge")
        for label in r.labels:
            matrix.add_column(label, justify="right")
        for label, row in zip(r.labels, r.confusion):
            matrix.add_row(label, *(str(n) for n in row))
        console.print(matrix)


@app.command("calibrate")
def calibrate_cmd(
    fixtures: Annotated[Path | None, typer.Option(help="folder of labelled recorded trajectories (*.json)")] = None,
    judge: Annotated[list[str] | None, typer.Option("--judge", help="judge to score with the fixtures (repeatable)")] = None,
    pack: Annotated[list[Path] | None, typer.Option("--pack", help="scenario pack folder (repeatable)")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Accuracy and Cohen's κ per judge, per label, category and role, per-finding precision and recall,
    false Fails on Pass runs, pathology recognition, with confusion matrices.

    With --fixtures, the named judges (default: dilemma-detectors) judge each labelled trajectory now;
    without it, the current judgements of human-labelled runs in the database are compared.
    """
    if fixtures is not None:
        if not fixtures.is_dir():
            typer.echo(f"error: {fixtures} is not a folder", err=True)
            raise typer.Exit(2)
        judges = [make_judge(name) for name in (judge or ["dilemma-detectors"])]
        try:
            verdicts = verdicts_from_fixtures(fixtures, load_catalog(pack or None), judges)
        except FixtureError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
    else:
        settings = Settings.from_env()
        with session_factory(settings.effective_database_url)() as session:
            verdicts = verdicts_from_database(session)
    if not verdicts:
        typer.echo("no labelled runs to compare against yet", err=True)
        raise typer.Exit(1)
    reports = calibrate(verdicts)
    if as_json:
        typer.echo(json.dumps([r.model_dump() for r in reports], indent=2))
    else:
        _print(reports)


COVERAGE_DOC = Path(__file__).resolve().parents[2] / "docs" / "judge-coverage.md"


@app.command("coverage")
def coverage_cmd(
    write: Annotated[bool, typer.Option("--write", help=f"write {COVERAGE_DOC.name} under docs/")] = False,
    pack: Annotated[list[Path] | None, typer.Option("--pack", help="scenario pack folder (repeatable)")] = None,
) -> None:
    """Which detector covers each dilemma checklist item, and which items go to the panel and human review."""
    from judges.coverage import coverage_markdown

    text = coverage_markdown(load_catalog(pack or None))
    if write:
        COVERAGE_DOC.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {COVERAGE_DOC}")
    else:
        typer.echo(text)
