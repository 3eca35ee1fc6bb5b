"""``integritylab queues``: annotation queues made from a selection of finished runs."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from orchestrator.cli.users_cmd import _settings

app = typer.Typer(help="Create and list annotation queues (people label their runs at /annotate).",
                  no_args_is_help=True)
err = Console(stderr=True)


@app.command("create")
def queues_create(
    name: Annotated[str, typer.Argument(help="the queue's name (/annotate?queue=NAME)")],
    annotators: Annotated[int, typer.Option("-n", "--annotators", help="distinct annotators per item")] = 2,
    overlap: Annotated[float, typer.Option(help="share of items all N annotators label (the rest get one)")] = 1.0,
    gold_rate: Annotated[float, typer.Option(help="gold items (runs with a settled human label) per selected run")] = 0.0,
    lease_minutes: Annotated[int, typer.Option(help="how long an item stays leased without renewal")] = 15,
    unblinded: Annotated[bool, typer.Option("--unblinded", help="show agent and model names to annotators")] = False,
    batch: Annotated[str | None, typer.Option(help="runs of this batch")] = None,
    family: Annotated[str | None, typer.Option(help="dilemma or probe")] = None,
    category: Annotated[str | None, typer.Option(help="e.g. T05")] = None,
    verdict: Annotated[str | None, typer.Option(help="the runs' current verdict")] = None,
    agent: Annotated[str | None, typer.Option(help="agent kind or model")] = None,
) -> None:
    """A queue of the finished runs that match every option given."""
    from orchestrator import annotation_store as store
    from orchestrator.cli.service_cmd import migrate_database
    from orchestrator.db.session import session_factory

    settings = _settings()
    migrate_database(settings.effective_database_url)
    selection = store.Selection(batch=batch, family=family, category=category, verdict=verdict, agent=agent)
    spec = store.QueueSpec(name=name, annotators_per_item=annotators, overlap=overlap, gold_rate=gold_rate,
                           lease_minutes=lease_minutes, blinded=not unblinded)
    with session_factory(settings.effective_database_url)() as session:
        try:
            _queue, added, gold = store.queue_from_selection(session, spec, selection, created_by="cli")
        except ValueError as exc:
            err.print(f"[red]error:[/red] {exc}; nothing was created")
            raise typer.Exit(2) from exc
        session.commit()
    err.print(f"queue {name}: {added} runs, {gold} gold items, {annotators} annotators per item")


@app.command("list")
def queues_list() -> None:
    """Every queue with its items, completed items and gold items."""
    from sqlalchemy import select

    from orchestrator import annotation_store as store
    from orchestrator.cli.service_cmd import migrate_database
    from orchestrator.db.models import AnnotationQueue
    from orchestrator.db.session import session_factory

    settings = _settings()
    migrate_database(settings.effective_database_url)
    table = Table("name", "N", "overlap", "lease", "blind", "items", "completed", "gold")
    with session_factory(settings.effective_database_url)() as session:
        for q in session.scalars(select(AnnotationQueue).order_by(AnnotationQueue.created_at)):
            counts = store.queue_counts(session, q)
            table.add_row(q.name + (" (default)" if q.is_default else ""), str(q.annotators_per_item),
                          f"{q.overlap:.0%}", f"{q.lease_minutes} min", "yes" if q.blinded else "no",
                          str(counts["items"]), str(counts["completed"]), str(counts["gold"]))
    Console().print(table)
