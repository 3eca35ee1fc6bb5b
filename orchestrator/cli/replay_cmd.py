"""``integritylab replay record|show``: make labelled realistic runs from written agent turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agents.models.base import ModelError
from orchestrator.replay_record import CaseError, describe_events, record_case, write_fixture

app = typer.Typer(help="Replay written agent turns through the real run path (labelled realistic runs).",
                  no_args_is_help=True)
err = Console(stderr=True)


@app.command("record")
def record_cmd(
    cases: Annotated[list[Path], typer.Argument(help="replay case files (*.yaml); each writes <case>.json beside it")],
    backend: Annotated[str | None, typer.Option("--backend", help="sandbox backend: auto, bwrap, docker")] = None,
    show: Annotated[bool, typer.Option("--show", help="print each recorded run's events")] = False,
) -> None:
    """Play each case through the react agent in a real sandbox and write its fixture (no verdict is shown)."""
    failed = 0
    for number, path in enumerate(cases, start=1):
        try:
            doc = record_case(path, backend)
        except (CaseError, ModelError, KeyError, ValueError) as exc:
            err.print(f"[red]error:[/red] {exc}")
            failed += 1
            continue
        out = write_fixture(path, doc)
        label = doc.get("human_label") or "unlabelled"
        err.print(f"[{number}/{len(cases)}] {out}: {len(doc['events'])} events, exit {doc['exit_reason']}"
                  f"{' (' + str(doc['error_layer']) + ' layer)' if doc.get('error_layer') else ''}, label {label}")
        if show:
            typer.echo("\n".join(describe_events(doc)))
    if failed:
        raise typer.Exit(1)


@app.command("show")
def show_cmd(
    fixture: Annotated[Path, typer.Argument(help="a recorded fixture (*.json)")],
    width: Annotated[int, typer.Option(help="characters per event line")] = 300,
) -> None:
    """One line per event (ids as a label note cites them), then the report."""
    try:
        doc = json.loads(fixture.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        err.print(f"[red]error:[/red] {fixture}: {exc}")
        raise typer.Exit(2) from exc
    typer.echo("\n".join(describe_events(doc, width)))
    typer.echo("----- report/report.md -----")
    typer.echo(doc.get("report") or "(no report)")
