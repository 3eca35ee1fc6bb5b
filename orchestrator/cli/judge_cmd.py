"""``integritylab judge probe|mcq``: score one response collected elsewhere.

Researchers often have responses from another harness (a chat export, a batch
API dump) and want the project's exact scoring on them without a run. Both
commands load the scenario's hidden rubric, score the text, and print either a
short summary or the full score as JSON. Operator mistakes (unknown scenario,
wrong family, unreadable file) print one clear line and exit 1, no traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from orchestrator.cli.scenarios_cmd import PackOption
from scenarios.loader import LoadedScenario, ScenarioError, load_catalog
from scenarios.rubric import Rubric
from scenarios.schema import Family

class _RunIdFirst(TyperGroup):
    """``integritylab judge RUN_ID`` is short for ``integritylab judge run RUN_ID``."""

    def resolve_command(self, ctx, args):  # type: ignore[no-untyped-def]
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().resolve_command(ctx, args)


app = typer.Typer(cls=_RunIdFirst, no_args_is_help=True,
                  help="Re-judge a stored run (judge RUN_ID), or score a single response collected elsewhere.")


@app.command("run")
def rejudge_run(run_id: Annotated[str, typer.Argument(help="the run to judge again")],
                as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Judge a finished run again with the current judges; earlier judgements stay, marked not current."""
    from orchestrator import runs as run_states
    from orchestrator.db.models import Run, RunStatus
    from orchestrator.embedded import make_context
    from orchestrator.execution import judge_run
    from orchestrator.settings import Settings

    ctx = make_context(Settings.from_env())
    with ctx.sessions() as session:
        run = session.get(Run, run_id)
        if run is None:
            typer.echo(f"error: no run {run_id!r}", err=True)
            raise typer.Exit(1)
        if run.finished_at is None or run.status not in (RunStatus.done, RunStatus.error, RunStatus.awaiting_review):
            typer.echo(f"error: run {run_id} is {run.status}; only finished runs can be re-judged", err=True)
            raise typer.Exit(1)
        run_states.transition(session, run_id, run.status, RunStatus.judging)
        session.commit()
    judgement = judge_run(ctx, run_id)
    if judgement is None:
        typer.echo(f"error: run {run_id} changed meanwhile; try again", err=True)
        raise typer.Exit(1)
    if as_json:
        typer.echo(judgement.model_dump_json(indent=2))
    else:
        typer.echo(f"{run_id}: {judgement.verdict} ({judgement.judge} v{judgement.judge_version}) - {judgement.rationale}")

ScenarioOption = Annotated[str, typer.Option("--scenario", help="Scenario id.", show_default=False)]
ResponseOption = Annotated[
    Path, typer.Option("--response", help="File holding the response text ('-' reads stdin).", show_default=False)
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the full score as JSON.")]

QUOTE_WIDTH = 160


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


def _scenario_and_rubric(scenario_id: str, packs: list[Path] | None, family: Family) -> tuple[LoadedScenario, Rubric]:
    try:
        catalog = load_catalog(list(packs) if packs else None)
    except ScenarioError as exc:
        for problem in exc.problems:
            typer.echo(str(problem), err=True)
        raise _fail(f"cannot load scenarios ({len(exc.problems)} problem(s) above)") from None
    try:
        loaded = catalog.get(scenario_id)
    except KeyError as exc:
        raise _fail(str(exc)) from None
    actual = loaded.scenario.family
    if actual != family:
        hint = f"; use `integritylab judge {actual.value}`" if actual in (Family.probe, Family.mcq) else ""
        raise _fail(f"scenario {scenario_id!r} is a {actual.value} scenario, not {family.value}{hint}")
    try:
        rubric = loaded.rubric()
    except ScenarioError as exc:
        raise _fail(f"cannot load the rubric of {scenario_id!r}: {exc}") from None
    return loaded, rubric


def _read_response(path: Path) -> str:
    if str(path) == "-":
        return sys.stdin.read()
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise _fail(f"cannot read response file {path}: it is a directory") from None
    except OSError as exc:
        raise _fail(f"cannot read response file {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _fail(f"response file {path} is not UTF-8 text") from None


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= QUOTE_WIDTH else flat[: QUOTE_WIDTH - 1] + "…"


@app.command("probe")
def probe(
    scenario: ScenarioOption,
    response: ResponseOption,
    pack: PackOption = None,
    as_json: JsonOption = False,
    upstream_error: Annotated[
        bool, typer.Option("--upstream-error", help="The provider kept failing; score as REFUSED with a flag.")
    ] = False,
) -> None:
    """Classify a probe response (REFUSED/ENGAGED × RECOGNIZED/UNRECOGNIZED) and compute its EDI."""
    _, rubric = _scenario_and_rubric(scenario, pack, Family.probe)
    text = _read_response(response)
    from judges.probe import score_probe  # spaCy loads only when a probe is scored

    score = score_probe(text, rubric, upstream_error=upstream_error)
    if as_json:
        typer.echo(score.model_dump_json(indent=2))
        return
    edi = "none" if score.edi is None else f"{score.edi:.3f}"
    ceiling = "none" if score.edi_ceiling is None else f"{score.edi_ceiling:.3f}"
    typer.echo(f"scenario: {score.scenario}")
    typer.echo(f"class:    {score.label.value} ({score.label.short})")
    typer.echo(f"EDI:      {edi} (ceiling {ceiling})")
    matched = [d.id for d in score.details if d.matched]
    typer.echo(f"details:  {len(matched)}/{len(score.details)} matched{': ' + ', '.join(matched) if matched else ''}")
    typer.echo(f"flags:    {', '.join(score.flags) or '-'}")
    for span in [*score.refusal_evidence, *score.recognition_evidence, *score.work_evidence, *score.hedge_evidence]:
        typer.echo(f"  [{span.kind}: {span.source}] {span.start}-{span.end}: \"{_clip(span.quote)}\"")


@app.command("mcq")
def mcq(
    scenario: ScenarioOption,
    condition: Annotated[str, typer.Option("--condition", help="Pressure condition the response was collected under.", show_default=False)],
    response: ResponseOption,
    pack: PackOption = None,
    as_json: JsonOption = False,
) -> None:
    """Read the answer letters of an mcq response and compute Q1, Q2, Q3 and IS."""
    loaded, rubric = _scenario_and_rubric(scenario, pack, Family.mcq)
    if condition not in loaded.scenario.conditions:
        raise _fail(
            f"scenario {scenario!r} does not run under condition {condition!r}; "
            f"its conditions: {', '.join(loaded.scenario.conditions)}"
        )
    text = _read_response(response)
    from judges.mcq import score_mcq

    try:
        score = score_mcq(text, rubric)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps({"condition": condition, **score.model_dump(mode="json")}, indent=2))
        return
    typer.echo(f"scenario:  {score.scenario} (condition {condition})")
    typer.echo(f"IS:        {score.integrity_score:.2f}")
    typer.echo(f"Q1 {score.q1:.0f}   Q2 {score.q2:.3f}   Q3 {score.q3:.3f}")
    for qid, given in score.answers.items():
        mark = "ok" if score.correct[qid] else ("unread" if given is None else "wrong")
        typer.echo(f"  {qid:5} {given or '-'}  key {score.key[qid]}  {mark}")
    typer.echo(f"flags:     {', '.join(score.flags) or '-'}")
