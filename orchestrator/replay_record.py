"""Recording labelled realistic runs: a replay case goes through the real run path and comes out a fixture.

A *replay case* is a replay file (see :mod:`agents.models.replay`) that also
names its scenario, its pressure condition and, once a person has read the
recorded run, its label. ``record_case`` plays it through the ``react`` agent
in a real sandbox (so every observation is what the workspace returned), in a
private throw-away database, and writes the labelled-trajectory fixture that
``integritylab judges calibrate --fixtures DIR`` reads: the same format as
``tests/fixtures/labelled/*.json``, with event ids numbered from 1.

The recorder never shows a verdict: the label is decided from the labelling
guide and the rubric before any judge sees the run.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.models.replay import ReplayScript
from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
from orchestrator.db.models import Batch, Run
from orchestrator.embedded import make_context, run_batch
from orchestrator.execution import report_text
from orchestrator.recorder import load_events
from orchestrator.settings import Settings
from scenarios.trajectory import TrajectoryEvent

LABELS = ("Pass", "Flawed", "Fail", "Error")


class CaseLabel(BaseModel):
    """A person's label of one recorded run, decided from docs/labelling-guide.md and the rubric."""

    model_config = ConfigDict(extra="forbid")

    human_label: str = Field(pattern="^(Pass|Flawed|Fail|Error)$")
    pathology_recognised: bool | None = None
    completed: bool | None = Field(default=None, description="controls: the planned work was finished")
    note: str = Field(min_length=10)


class ReplayCase(ReplayScript):
    model_config = ConfigDict(extra="forbid")

    case: str | None = None
    scenario: str  # type: ignore[assignment]  # required here
    condition: str = "none"
    style: str = ""
    label: CaseLabel | None = None


class CaseError(ValueError):
    """A replay case file that cannot be recorded; the message names the file and field."""


def load_case(path: Path) -> ReplayCase:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CaseError(f"{path}: {exc}") from exc
    if not isinstance(doc, dict):
        raise CaseError(f"{path}: a replay case is a mapping with scenario and turns")
    try:
        return ReplayCase.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise CaseError(f"{path}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from exc


def _renumbered(events: list[TrajectoryEvent]) -> list[dict[str, Any]]:
    """Event ids from 1 in trajectory order, so a label note's ids do not depend on the database."""
    return [event.model_copy(update={"id": n}).model_dump(mode="json") for n, event in enumerate(events, start=1)]


def record_case(path: Path, backend: str | None = None, data_dir: Path | None = None) -> dict[str, Any]:
    """Play one case through the real run path and return its fixture document (no verdict in it)."""
    case = load_case(path)
    with tempfile.TemporaryDirectory(prefix="il-replay-") as scratch:
        settings = Settings(data_dir=data_dir or Path(scratch))
        ctx = make_context(settings, None, backend)
        spec = BatchSpec(name=f"replay {path.name}", selection=Selection(ids=[case.scenario]),
                         agents=[AgentSpec(agent="react", model=f"replay:{path.resolve()}")],
                         conditions=[case.condition])
        batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
        run_batch(ctx, batch_id, workers=1)
        with ctx.sessions() as session:
            batch = session.get(Batch, batch_id)
            assert batch is not None
            (run,) = [r for r in session.query(Run).filter(Run.batch_id == batch_id)]
            events = load_events(session, run.id)
            report = report_text(session, ctx.store, run.id)
            doc: dict[str, Any] = {
                "case": case.case or path.stem,
                "scenario": run.scenario_id, "category": run.category, "role": run.role,
                "condition": run.condition, "model": "replay", "style": case.style,
                "sandbox_backend": run.sandbox_backend,
                "exit_reason": run.exit_reason, "error_layer": run.error_layer, "error_message": run.error_message,
                "report": report, "events": _renumbered(events),
            }
    if case.label is not None:
        doc.update(case.label.model_dump())
    else:
        doc["human_label"] = None
    return doc


def fixture_path(case_path: Path) -> Path:
    return case_path.with_suffix(".json")


def write_fixture(case_path: Path, doc: dict[str, Any]) -> Path:
    out = fixture_path(case_path)
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def describe_events(doc: dict[str, Any], width: int = 300) -> list[str]:
    """One line per event, for a person reading a recorded run before labelling it."""
    lines: list[str] = []
    for event in doc["events"]:
        payload = event["payload"]
        kind = event["kind"]
        if kind == "model_call":
            continue
        if kind == "tool_call":
            body = f"{payload['tool']} {json.dumps(payload.get('arguments', {}), ensure_ascii=False)}"
        elif kind == "observation":
            body = f"exit={payload.get('exit_code')} {payload.get('output', '')}"
        elif kind == "message":
            body = str(payload.get("text", ""))
        else:
            body = json.dumps(payload, ensure_ascii=False)
        body = body.replace("\n", "⏎ ")
        if len(body) > width:
            body = body[:width] + f" …(+{len(body) - width})"
        lines.append(f"{event['id']:>4} {kind:<12} {body}")
    lines.append(f"exit_reason={doc.get('exit_reason')} error_layer={doc.get('error_layer')}")
    return lines
