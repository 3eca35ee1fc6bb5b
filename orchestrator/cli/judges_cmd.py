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
from orchestrator.calibration_data import verdicts_from_database, verdicts_from_fixtures
from orchestrator.db.session import session_factory
from orchestrator.settings import Settings
from scenarios.loader import load_catalog

app = typer.Typer(help="Judge quality: agreement with human labels.", no_args_is_help=True)


def _print(reports: list[JudgeCalibration]) -> None:
    console = Console()
    summary = Table(title="judge agreement with human labels")
    for column in ("judge", "n", "accuracy", "Cohen's κ", "per category", "disagreements"):
        summary.add_column(column)
    for r in reports:
        summary.add_row(r.judge, str(r.n), f"{r.accuracy:.1%}", "–" if r.kappa is None else f"{r.kappa:.3f}",
                        ", ".join(f"{c} {a:.0%}" for c, a in r.per_category.items()), "\n".join(r.disagreements) or "none")
    console.print(summary)
    for r in reports:
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
    """Accuracy and Cohen's κ per judge, per label and per category, with confusion matrices.

    With --fixtures, the named judges (default: dilemma-detectors) judge each labelled trajectory now;
    without it, the current judgements of human-labelled runs in the database are compared.
    """
    if fixtures is not None:
        if not fixtures.is_dir():
            typer.echo(f"error: {fixtures} is not a folder", err=True)
            raise typer.Exit(2)
        judges = [make_judge(name) for name in (judge or ["dilemma-detectors"])]
        verdicts = verdicts_from_fixtures(fixtures, load_catalog(pack or None), judges)
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
