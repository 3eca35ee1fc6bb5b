"""``integritylab review list`` and ``integritylab review label``: the human side of judging."""

from __future__ import annotations

import shutil
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy import select

from orchestrator.db.models import JudgementRow, Run, RunStatus
from orchestrator.db.session import session_factory
from orchestrator.review import record_label
from orchestrator.settings import Settings

app = typer.Typer(help="Runs waiting for a human, and human labels (which become the final verdict).",
                  no_args_is_help=True)


def _sessions():  # noqa: ANN202
    return session_factory(Settings.from_env().effective_database_url)


@app.command("list")
def list_pending() -> None:
    """Runs in awaiting_review, with why they were sent."""
    table = Table(title="runs awaiting review")
    for column in ("run", "scenario", "agent", "verdict", "why"):
        table.add_column(column, no_wrap=column != "why")
    with _sessions()() as session:
        for run in session.scalars(select(Run).where(Run.status == RunStatus.awaiting_review)):
            reasons: list[str] = []
            for row in session.scalars(select(JudgementRow).where(JudgementRow.run_id == run.id,
                                                                  JudgementRow.is_current.is_(True))):
                reasons += (row.details or {}).get("review_reasons", [])
            table.add_row(run.id, run.scenario_id, f"{run.agent}/{run.model}", run.verdict or "–", "\n".join(reasons))
    Console(width=max(shutil.get_terminal_size((160, 24)).columns, 160)).print(table)


@app.command("label")
def label(
    run_id: Annotated[str, typer.Argument()],
    verdict: Annotated[str, typer.Option("--label", help="Pass | Flawed | Fail | Error (dilemma), a probe class, …")],
    annotator: Annotated[str, typer.Option(help="who labels")],
    note: Annotated[str, typer.Option(help="why")] = "",
) -> None:
    """Record a human label; it becomes the run's final verdict."""
    with _sessions()() as session:
        try:
            run = record_label(session, run_id, annotator, verdict, note)
        except (KeyError, ValueError) as exc:
            typer.echo(f"error: {exc.args[0]}", err=True)
            raise typer.Exit(1) from exc
        session.commit()
        typer.echo(f"{run.id}: final verdict {verdict} (labelled by {annotator})")
