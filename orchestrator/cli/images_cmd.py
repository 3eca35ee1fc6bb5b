"""``integritylab images build|list``: the sandbox and service images, built with or without a registry."""

from __future__ import annotations

import json
import shutil
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from sandboxes.imagebuild import IMAGES, BuildOutcome, ImageBuildError, build_image, default_images, list_images

app = typer.Typer(help="Build and list the sandbox and service images.", no_args_is_help=True)
err = Console(stderr=True, highlight=False)


def _out() -> Console:
    return Console(width=max(shutil.get_terminal_size((140, 24)).columns, 140), highlight=False)


def _mb(size: int) -> str:
    return f"{size / 1e6:,.0f} MB"


@app.command()
def build(
    offline: Annotated[
        bool,
        typer.Option("--offline", help="No registry: mmdebstrap + docker import (Debian mirror, PyPI, npm only)."),
    ] = False,
    only: Annotated[
        Optional[list[str]],
        typer.Option("--only", help=f"Build just this image (and its base if needed), repeatable or comma-separated: "
                                    f"{', '.join(IMAGES)}."),
    ] = None,
    all_images: Annotated[
        bool, typer.Option("--all", help="Also build the optional images (agent-cli; service, redis, postgres).")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if the inputs are unchanged.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only print the summary.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
) -> None:
    """Build the sandbox image (default), or --only NAME[,NAME] / --all; unchanged inputs are reused.

    --only service,redis,postgres builds what docker-compose.yml needs (README, "Service").
    """
    wanted = [name.strip() for value in only or [] for name in value.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in IMAGES]
    if unknown:
        err.print(f"[red]error:[/red] unknown image {unknown[0]!r}; known: {', '.join(IMAGES)}")
        raise typer.Exit(2)
    names = default_images(wanted or None, include_optional=all_images, offline=offline)
    log = (lambda _m: None) if quiet or as_json else (lambda m: err.print(m, markup=False))
    outcomes: dict[str, BuildOutcome] = {}
    try:
        for name in names:
            for outcome in build_image(name, offline=offline, force=force, log=log):
                outcomes.setdefault(outcome.image, outcome)
    except ImageBuildError as exc:
        err.print(f"[red]error:[/red] {exc}", markup=True)
        raise typer.Exit(1) from exc
    if as_json:
        _out().print_json(json.dumps([o.__dict__ for o in outcomes.values()], default=str))
        return
    table = Table(title="images")
    for column in ("image", "status", "method", "time", "size", "inputs hash"):
        table.add_column(column, justify="right" if column in ("time", "size") else "left")
    for o in outcomes.values():
        table.add_row(
            o.ref, o.status, o.method or "–", f"{o.seconds:.0f} s" if o.status == "built" else "–",
            _mb(o.size_bytes), o.inputs_hash[:12],
        )  # fmt: skip
    _out().print(table)


@app.command("list")
def list_cmd(as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False) -> None:
    """Show the integritylab images on the engine: size, created, inputs hash, current or stale."""
    try:
        rows = list_images()
    except ImageBuildError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    if as_json:
        _out().print_json(json.dumps(rows))
        return
    table = Table(title="integritylab images")
    for column in ("image", "tags", "id", "size", "created", "inputs hash", "method", "current"):
        table.add_column(column, justify="right" if column == "size" else "left")
    for r in rows:
        table.add_row(
            r["image"], ", ".join(r["tags"]) or "<none>", r["id"], _mb(r["size_bytes"]), r["created"],
            r["inputs_hash"][:12], r["method"], "yes" if r["current"] else "[yellow]stale[/yellow]",
        )  # fmt: skip
    if not rows:
        err.print("no integritylab images yet: integritylab images build --offline")
    _out().print(table)
