"""``integritylab annotations``: human labels and checklist answers out to CSV/JSONL and back in."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from orchestrator.cli.users_cmd import _settings

app = typer.Typer(help="Export and import human labels with their checklist answers (CSV or JSONL).",
                  no_args_is_help=True)
err = Console(stderr=True)


@app.command("export")
def annotations_export(
    output: Annotated[Path | None, typer.Option("-o", "--output", help="file to write (default: standard output)")] = None,
    fmt: Annotated[str | None, typer.Option("--format", help="csv or jsonl (default: from the file name, else csv)")] = None,
    queue: Annotated[str | None, typer.Option(help="only labels given in this queue")] = None,
    run: Annotated[str | None, typer.Option(help="only labels on this run")] = None,
) -> None:
    """One row per run × annotator × checklist item, with the checklist version and the trajectory hash."""
    from annotation.exchange import ExchangeError, dumps, format_of
    from orchestrator.annotation_exchange import export_records
    from orchestrator.cli.service_cmd import migrate_database
    from orchestrator.db.session import session_factory

    try:
        chosen = format_of(output, fmt) if output is not None and (fmt or output.suffix) else format_of(
            Path("out.csv"), fmt)
    except ExchangeError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    settings = _settings()
    migrate_database(settings.effective_database_url)
    with session_factory(settings.effective_database_url)() as session:
        records = export_records(session, queue=queue, run=run)
    text = dumps(records, chosen)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
    err.print(f"{len(records)} labels exported ({chosen}{', ' + str(output) if output else ''})")


@app.command("import")
def annotations_import(
    path: Annotated[Path, typer.Argument(help="a file written by 'annotations export' (or in its layout)")],
    fmt: Annotated[str | None, typer.Option("--format", help="csv or jsonl (default: from the file name)")] = None,
) -> None:
    """Add the labels not recorded yet. The whole file is checked first; any problem imports nothing."""
    from annotation.exchange import ExchangeError, format_of, loads
    from orchestrator.annotation_exchange import import_records
    from orchestrator.cli.service_cmd import migrate_database
    from orchestrator.db.session import session_factory

    if not path.is_file():
        err.print(f"[red]error:[/red] {path}: no such file")
        raise typer.Exit(2)
    settings = _settings()
    migrate_database(settings.effective_database_url)
    try:
        records = loads(path.read_text(encoding="utf-8"), format_of(path, fmt), str(path))
        with session_factory(settings.effective_database_url)() as session:
            outcome = import_records(session, records, str(path), actor="cli")
            session.commit()
    except ExchangeError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    err.print(f"{outcome.added} labels added, {outcome.unchanged} already recorded (unchanged)")
