"""``integritylab ablate``: run (or take finished batches of) the same scenarios under two or more conditions
and print the paired comparison (orchestrator/ablation.py)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from orchestrator.ablation import AblationReport, ablation_of
from orchestrator.batches import AgentSpec, BatchSpec, RunBudget, Selection, plan_batch
from orchestrator.cli.runs_cmd import BackendOpt, JsonOpt, PackOpt, WorkersOpt, _context, _run_and_report
from orchestrator.cli.selection_opts import (
    CategoryOpt,
    FamilyOpt,
    RoleOpt,
    SelectionError,
    categories,
    one_family,
    one_role,
)
from orchestrator.db.session import session_factory
from orchestrator.embedded import run_batch
from orchestrator.settings import Settings

out = Console()
err = Console(stderr=True)


def ablate(
    batch: Annotated[list[str] | None, typer.Option("--batch", help="finished batch to analyse (repeatable); "
                                                                    "without it a new batch is run")] = None,
    baseline: Annotated[str | None, typer.Option(help="the condition the others are compared with "
                                                      "(default: none, else the first)")] = None,
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="scenario id (repeatable)")] = None,
    family: FamilyOpt = None,
    category: CategoryOpt = None,
    role: RoleOpt = None,
    agent: Annotated[str, typer.Option(help="agent kind")] = "react",
    model: Annotated[list[str] | None, typer.Option("--model", help="model (repeatable)")] = None,
    condition: Annotated[list[str] | None, typer.Option(
        "--condition", help="condition (repeat: two or more, e.g. --condition none --condition completion)")] = None,
    epochs: Annotated[int, typer.Option(min=1, max=1000)] = 1,
    seed: int = 0,
    max_steps: Annotated[int, typer.Option(min=1, max=10_000)] = 100,
    pack: PackOpt = None,
    backend: BackendOpt = None,
    workers: WorkersOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Pair runs by scenario, agent, epoch and seed across conditions; exact McNemar per agent and category,
    Benjamini-Hochberg across the ablation, paired bootstrap intervals (docs/scores.md)."""
    if not batch:
        if len(condition or []) < 2:
            err.print("[red]error:[/red] an ablation runs two or more conditions: "
                      "--condition none --condition completion (or give finished batches with --batch)")
            raise typer.Exit(2)
        try:
            spec = BatchSpec(name="ablation", selection=Selection(
                ids=scenario or [], family=one_family(family), category=categories(category), role=one_role(role)),
                agents=[AgentSpec(agent=agent, model=m) for m in (model or ["scripted:honest"])],
                conditions=condition or [], epochs=epochs, seed=seed, budget=RunBudget(max_steps=max_steps))
        except (ValidationError, SelectionError) as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
        ctx, settings = _context(backend, pack, as_json)
        batch_id, count = plan_batch(ctx.sessions, ctx.catalog, spec)
        if not as_json:
            err.print(f"batch {batch_id}: {count} run(s) planned for the ablation")
        if as_json:  # one JSON document on stdout: the ablation's, not the batch table's too
            for failure in run_batch(ctx, batch_id, workers or settings.workers):
                err.print(f"run failed: {failure}")
        else:
            _run_and_report(ctx, batch_id, count, workers or settings.workers, False)
        batch = [batch_id]
    settings = Settings.from_env()
    with session_factory(settings.effective_database_url)() as session:
        try:
            report = ablation_of(session, batch, baseline)
        except (LookupError, ValueError) as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
    if as_json:
        out.print_json(json.dumps(report.model_dump(mode="json")))
        return
    print_report(report)


def print_report(report: AblationReport) -> None:
    table = Table(title=f"ablation of {', '.join(report.batches)}: each condition against {report.baseline} "
                        "(integrity problems on trap runs, paired)")
    for column in ("agent", "category", "condition", "pairs", "baseline", "condition rate", "difference [95%]",
                   "McNemar p", "BH q"):
        table.add_column(column, justify="left" if column in ("agent", "category", "condition") else "right")
    for t in report.tests:
        table.add_row(t.agent, t.category, t.condition, str(t.pairs), f"{t.baseline_rate:.2f}",
                      f"{t.condition_rate:.2f}", f"{t.difference:+.2f} [{t.low:+.2f}, {t.high:+.2f}]",
                      f"{t.p_value:.3f}", f"{t.q_value:.3f}{' *' if t.significant else ''}")
    out.print(table)
    if report.disclosure:
        split = Table(title="dilemma traps that made up data: disclosed vs undisclosed (SciIntegrity-Bench T08 split)")
        for column in ("agent", "condition", "trap runs", "synthesised, disclosed", "synthesised, undisclosed"):
            split.add_column(column)
        for d in report.disclosure:
            split.add_row(d.agent, d.condition, str(d.trap_runs), str(d.synthesised_disclosed),
                          str(d.synthesised_undisclosed))
        out.print(split)
    if report.scores:
        scores = Table(title="score changes (mcq IS, probe IFR), paired by scenario")
        for column in ("agent", "measure", "condition", "pairs", "baseline", "condition value", "difference [95%]"):
            scores.add_column(column)
        for s in report.scores:
            scores.add_row(s.agent, s.measure, s.condition, str(s.pairs), f"{s.baseline_value:.3f}",
                           f"{s.condition_value:.3f}", f"{s.difference:+.3f} [{s.low:+.3f}, {s.high:+.3f}]")
        out.print(scores)
    out.print(f"* BH q < 0.05. {report.left_out_pairs} pair(s) left out (a side errored or is unfinished); "
              f"{report.unpaired_runs} run(s) without a partner.")
