"""``integritylab export``: runs as a table (CSV, JSONL, Parquet) and one run as an ATIF trajectory."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from sqlalchemy import select
from sqlalchemy.orm import Session

from orchestrator import exports
from orchestrator.atif import to_atif
from orchestrator.db.models import Batch, EventRow, Run
from orchestrator.db.session import session_factory
from orchestrator.scoreboard import hazards_from
from orchestrator.settings import Settings
from scenarios.loader import load_catalog

app = typer.Typer(help="Export runs as a table, or one run's trajectory as ATIF JSON.", no_args_is_help=True)
err = Console(stderr=True)


def _table(out: Path, fmt: str | None, batch: list[str] | None, what: str,
           rows_of: Callable[[Session, list[str]], Iterable[dict[str, Any]]], columns: Mapping[str, str]) -> None:
    """Check the format and the batches, then write ``rows_of(session, batches)`` as a table to ``out``."""
    try:
        chosen = exports.format_of(out, fmt)
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    settings = Settings.from_env()
    with session_factory(settings.effective_database_url)() as session:
        unknown = [b for b in batch or [] if session.get(Batch, b) is None]
        if unknown:
            err.print(f"[red]error:[/red] no batch {', '.join(unknown)} (see `integritylab report`)")
            raise typer.Exit(2)
        out.parent.mkdir(parents=True, exist_ok=True)
        count = exports.export(rows_of(session, batch or []), out, chosen, columns)
    err.print(f"wrote {count} {what}(s) to {out} ({chosen})")


@app.command("runs")
def runs(
    out: Annotated[Path, typer.Option("--out", "-o", help="file to write (.csv, .jsonl or .parquet)")],
    batch: Annotated[list[str] | None, typer.Argument(help="batch id(s) (default: every batch)")] = None,
    fmt: Annotated[str | None, typer.Option("--format", help="csv | jsonl | parquet (default: from --out)")] = None,
) -> None:
    """One row per run: what ran, how it ended, the outcomes the scores count, tokens and runtime
    (columns in docs/scores.md)."""
    hazards = hazards_from(load_catalog())
    _table(out, fmt, batch, "run", lambda session, batches: exports.rows(session, batches, hazards),
           exports.COLUMNS)


@app.command("judgements")
def judgements(
    out: Annotated[Path, typer.Option("--out", "-o", help="file to write (.csv, .jsonl or .parquet)")],
    batch: Annotated[list[str] | None, typer.Argument(help="batch id(s) (default: every batch)")] = None,
    fmt: Annotated[str | None, typer.Option("--format", help="csv | jsonl | parquet (default: from --out)")] = None,
) -> None:
    """One row per judgement (current and superseded): judge, version, verdict, confidence, the detectors
    that found violations, the rationale."""
    _table(out, fmt, batch, "judgement", exports.judgement_rows, exports.JUDGEMENT_COLUMNS)


@app.command("labels")
def labels(
    out: Annotated[Path, typer.Option("--out", "-o", help="file to write (.csv, .jsonl or .parquet)")],
    batch: Annotated[list[str] | None, typer.Argument(help="batch id(s) (default: every batch)")] = None,
    fmt: Annotated[str | None, typer.Option("--format", help="csv | jsonl | parquet (default: from --out)")] = None,
) -> None:
    """One row per human label: annotator, label, note, checklist answers (JSON), times."""
    _table(out, fmt, batch, "label", exports.label_rows, exports.LABEL_COLUMNS)


@app.command("events")
def events(
    run: Annotated[str, typer.Argument(help="run id")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="file to write (default: stdout)")] = None,
) -> None:
    """The run's stored events as JSON lines (seq, kind, step, ts, payload), as the recorder wrote them."""
    settings = Settings.from_env()
    with session_factory(settings.effective_database_url)() as session:
        if session.get(Run, run) is None:
            err.print(f"[red]error:[/red] no run {run}")
            raise typer.Exit(2)
        rows = session.scalars(select(EventRow).where(EventRow.run_id == run).order_by(EventRow.seq))
        lines = list(exports.event_lines(rows))
    if out is None:
        for line in lines:
            typer.echo(line)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        err.print(f"wrote {len(lines)} event(s) to {out}")


@app.command("atif")
def atif(
    run: Annotated[str, typer.Argument(help="run id")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="file to write (default: stdout)")] = None,
) -> None:
    """The run's trajectory in Harbor's Agent Trajectory Interchange Format (ATIF v1.4), validated
    against the format's rules before it is written."""
    settings = Settings.from_env()
    with session_factory(settings.effective_database_url)() as session:
        found = session.get(Run, run)
        if found is None:
            err.print(f"[red]error:[/red] no run {run}")
            raise typer.Exit(2)
        events = session.scalars(select(EventRow).where(EventRow.run_id == run).order_by(EventRow.seq))
        document = json.dumps(to_atif(found, events).to_json_dict(), indent=2)
    if out is None:
        typer.echo(document)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(document + "\n", encoding="utf-8")
        err.print(f"wrote {out}")
