"""``integritylab scenarios list|show|validate``.

Bad packs are an authoring problem, not a program failure, so every command
prints located problems and exits 1 instead of showing a traceback. ``show``
keeps the rubric hidden unless asked, because operators often paste its output
into places an agent might later read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from scenarios.loader import (
    Catalog,
    LoadedScenario,
    Problem,
    ScenarioError,
    builtin_pack_root,
    load_catalog,
    validate_paths,
)
from scenarios.rubric import Rubric
from scenarios.schema import DilemmaScenario, McqScenario, ProbeScenario

app = typer.Typer(help="List, show and validate scenario packs.", no_args_is_help=True)

PackOption = Annotated[
    Optional[list[Path]],
    typer.Option(
        "--pack",
        help="Pack root, family folder or scenario folder to use instead of the built-in packs (repeatable).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _console(min_width: int = 0) -> Console:
    """Built per call so output goes to whatever stdout is current (tests swap it).

    When piped, rich assumes 80 columns and would fold ids mid-word; widen instead.
    """
    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal and console.width < min_width:
        console = Console(highlight=False, soft_wrap=True, width=min_width)
    return console


def _print_problems(problems: list[Problem], err: bool = True) -> None:
    for problem in problems:
        typer.echo(str(problem), err=err)
    noun = "problem" if len(problems) == 1 else "problems"
    typer.echo(f"{len(problems)} {noun} found", err=err)


def _load(packs: list[Path] | None) -> Catalog:
    try:
        return load_catalog(list(packs) if packs else None)
    except ScenarioError as exc:
        _print_problems(exc.problems)
        raise typer.Exit(1) from None


def _summary(loaded: LoadedScenario) -> dict[str, Any]:
    s = loaded.scenario
    return {
        "id": s.id,
        "family": s.family.value,
        "category": s.category,
        "domain": s.domain,
        "role": s.role.value,
        "is_trap": loaded.is_trap,
        "hazard": s.hazard.value,
        "twin": s.twin,
        "title": s.title,
    }


@app.command("list")
def list_scenarios(
    pack: PackOption = None,
    family: Annotated[Optional[str], typer.Option("--family", help="dilemma, probe or mcq.")] = None,
    category: Annotated[Optional[str], typer.Option("--category", help="e.g. T08.")] = None,
    role: Annotated[Optional[str], typer.Option("--role", help="trap or control.")] = None,
    as_json: JsonOption = False,
) -> None:
    """List scenarios with their family, role and category."""
    catalog = _load(pack)
    try:
        chosen = catalog.select(family=family, category=category, role=role)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    rows = [_summary(loaded) for loaded in chosen]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    columns = ("id", "family", "role", "category", "domain", "hazard", "twin")
    table = Table(title=f"{len(rows)} scenarios")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(str(row[c] or "-") for c in columns))
    widest = sum(max([len(c)] + [len(str(r[c] or "-")) for r in rows]) + 3 for c in columns)
    _console(min_width=widest + 1).print(table)


def _workspace_listing(loaded: LoadedScenario) -> list[dict[str, Any]]:
    sizes: list[int | None] = [None] * len(loaded.scenario.workspace)
    try:
        sizes = [len(content) for _, content in loaded.workspace_files()]
    except ScenarioError:
        pass  # the listing still helps; validate explains what is wrong
    listing = []
    for item, size in zip(loaded.scenario.workspace, sizes):
        origin = "inline" if item.content is not None else f"workspace/{item.source or item.path}"
        listing.append({"path": item.path, "from": origin, "bytes": size})
    return listing


def _task_text(loaded: LoadedScenario) -> str:
    s = loaded.scenario
    if isinstance(s, DilemmaScenario):
        return s.prompt.task
    if isinstance(s, ProbeScenario):
        requests = "\n".join(f"{r.id}: {r.text}" for r in s.prompt.requests)
        return f"{s.prompt.preamble}\n\n{requests}"
    if isinstance(s, McqScenario):
        parts = [s.prompt.context, s.prompt.situation, json.dumps(s.prompt.artifact, indent=2)]
        for question in s.prompt.questions:
            options = "\n".join(f"  {o.key}) {o.text}" for o in question.options)
            parts.append(f"{question.id}: {question.text}\n{options}")
        return "\n\n".join(parts)
    return ""


def _print_rubric(console: Console, rubric: Rubric) -> None:
    console.print(Text("\nRubric (judges only)", style="bold red"))
    for item in rubric.checklist:
        console.print(Text(f"  [{item.kind.value}] {item.id}: {item.text}"))
        console.print(Text(f"      evidence: {item.evidence}", style="dim"))
    console.print(Text(f"  outcome map: {rubric.outcome_map}"))
    for off in rubric.off_limits:
        console.print(Text(f"  off limits: {off.path} (allowed reads: {off.allowed_reads})"))
    for detail in rubric.withheld_details:
        console.print(Text(f"  withheld {detail.id} [{detail.level.value}]: {', '.join(detail.patterns)}"))
    for key in rubric.answer_key:
        console.print(Text(f"  answer {key.question}: {key.answer}"))


@app.command("show")
def show(
    scenario_id: Annotated[str, typer.Argument(metavar="ID", help="Scenario id.")],
    pack: PackOption = None,
    as_json: JsonOption = False,
    rubric: Annotated[bool, typer.Option("--rubric", help="Also print the hidden rubric.")] = False,
) -> None:
    """Show one scenario: task text, workspace files and metadata."""
    catalog = _load(pack)
    try:
        loaded = catalog.get(scenario_id)
    except KeyError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    hidden: Rubric | None = None
    if rubric:
        try:
            hidden = loaded.rubric()
        except ScenarioError as exc:
            _print_problems(exc.problems)
            raise typer.Exit(1) from None
    files = _workspace_listing(loaded)

    if as_json:
        payload: dict[str, Any] = {
            **_summary(loaded),
            "pack": loaded.pack,
            "directory": str(loaded.directory),
            "scenario": loaded.scenario.model_dump(mode="json"),
            "task": _task_text(loaded),
            "workspace_files": files,
        }
        if hidden is not None:
            payload["rubric"] = hidden.model_dump(mode="json")
        typer.echo(json.dumps(payload, indent=2))
        return

    s = loaded.scenario
    console = _console()
    console.print(Text(f"{s.id} — {s.title}", style="bold"))
    meta = [
        ("family", s.family.value), ("role", s.role.value), ("category", s.category),
        ("domain", s.domain), ("hazard", s.hazard.value), ("twin", s.twin or "-"),
        ("conditions", ", ".join(s.conditions) or "-"), ("tags", ", ".join(s.tags) or "-"),
        ("pack", loaded.pack), ("directory", str(loaded.directory)),
    ]
    for name, value in meta:
        console.print(Text(f"  {name}: {value}"))
    console.print(Text("\nTask", style="bold"))
    console.print(Text(_task_text(loaded)))
    console.print(Text(f"\nWorkspace ({len(files)} files)", style="bold"))
    for entry in files:
        size = "?" if entry["bytes"] is None else f"{entry['bytes']} bytes"
        console.print(Text(f"  {entry['path']}  ({size}, from {entry['from']})"))
    if hidden is not None:
        _print_rubric(console, hidden)


@app.command("validate")
def validate(
    paths: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="Pack roots, family folders or scenario folders (default: the built-in packs).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Validate scenario packs and print every problem as file:line: field: message."""
    targets = list(paths) if paths else [builtin_pack_root()]
    try:
        catalog, problems = validate_paths(targets)
    except Exception as exc:  # validate_paths promises not to raise; never show a traceback anyway
        typer.echo(f"error: validator failed: {exc}")
        raise typer.Exit(1) from None
    if problems or catalog is None:
        _print_problems(problems, err=False)
        raise typer.Exit(1)
    typer.echo(f"{len(catalog)} scenarios OK")


@app.command("catalogue")
def catalogue(
    write: Annotated[bool, typer.Option("--write", help="write docs/scenarios.md instead of printing")] = False,
    packs: Annotated[list[Path] | None, typer.Option("--pack", help="scenario pack folder (repeatable)")] = None,
) -> None:
    """Print (or --write) the Markdown catalogue of every scenario."""
    from scenarios.catalogue import CATALOGUE_PATH, render_catalogue

    text = render_catalogue(_load(packs))
    if write:
        CATALOGUE_PATH.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {CATALOGUE_PATH}")
    else:
        typer.echo(text, nl=False)


@app.command("new")
def new(
    base_id: Annotated[str, typer.Argument(help="e.g. t08-river-chemistry (the pair gets -trap and -control)")],
    family: Annotated[str, typer.Option(help="scenario family")] = "dilemma",
    category: Annotated[str, typer.Option(help="e.g. T08")] = "T08",
    domain: Annotated[str, typer.Option(help="e.g. ecology")] = "ecology",
    pack: Annotated[Path | None, typer.Option("--pack", help="pack root to write into")] = None,
) -> None:
    """Scaffold a trap and its control twin (files validate; TODOs mark what to write)."""
    from scenarios.loader import builtin_pack_root
    from scenarios.scaffold import scaffold_dilemma

    if family != "dilemma":
        typer.echo(f"error: scaffolding is available for the dilemma family only (got {family!r})", err=True)
        raise typer.Exit(2)
    root = (pack or builtin_pack_root()) / family
    try:
        written = scaffold_dilemma(root, base_id, category, domain)
    except (ValueError, FileExistsError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    for folder in written:
        typer.echo(f"created {folder}")
    typer.echo(f"next: edit the TODOs, then `integritylab scenarios validate {root}`")
