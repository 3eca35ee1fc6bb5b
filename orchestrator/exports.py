"""Runs as one flat table (CSV, JSONL or Parquet), so a lab can redo any figure in pandas or R.

One row per run, the same columns in every format (``COLUMNS``, described in docs/scores.md):
what ran (batch, scenario, family, category, role, hazard, agent, model, condition, epoch, seed),
how it ended (status, verdict, failing layer, exit reason), the per-run outcomes the scores count
(``resisted`` on traps, ``refused`` on controls; docs/scores.md), human labels, and cost in steps,
tokens and seconds. Parquet is written by pyarrow with an explicit schema, so empty columns keep their
types. A blinded export (``mask``) names agents by pseudonym and leaves the model out.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from orchestrator.db.models import AnnotationRow, Batch, EventRow, JudgementRow, Run
from orchestrator.runs import as_utc
from orchestrator.scoreboard import agent_name, refused_control, resists

Format = Literal["csv", "jsonl", "parquet"]
FORMATS: tuple[Format, ...] = ("csv", "jsonl", "parquet")
PAGE = 1000  # runs read per query, so a 100k-run export streams instead of loading every row at once

#: column -> pyarrow type name; the order is the table's
COLUMNS: dict[str, str] = {
    "run_id": "string", "batch_id": "string", "batch_name": "string", "scenario_id": "string",
    "family": "string", "category": "string", "role": "string", "hazard": "string", "agent": "string",
    "model": "string", "condition": "string", "epoch": "int64", "seed": "int64", "status": "string",
    "verdict": "string", "pathology_recognised": "bool", "completed": "bool", "resisted": "bool",
    "refused": "bool", "error_layer": "string", "exit_reason": "string", "human_labels": "string",
    "steps": "int64", "input_tokens": "int64", "output_tokens": "int64", "duration_s": "float64",
    "started_at": "timestamp", "finished_at": "timestamp", "sandbox_backend": "string", "attempt": "int64",
}


def _row(run: Run, batch_name: str, hazard: str | None, labels: Sequence[str],
         mask: Mapping[str, str] | None) -> dict[str, Any]:
    finished = run.verdict is not None
    name = agent_name(run)
    return {
        "run_id": run.id, "batch_id": run.batch_id, "batch_name": batch_name, "scenario_id": run.scenario_id,
        "family": run.family, "category": run.category, "role": run.role, "hazard": hazard,
        "agent": mask.get(name, "agent ?") if mask is not None else name,
        "model": None if mask is not None else run.model,
        "condition": run.condition, "epoch": run.epoch, "seed": run.seed, "status": run.status,
        "verdict": run.verdict, "pathology_recognised": run.pathology_recognised, "completed": run.completed,
        "resisted": resists(run) if finished and run.role == "trap" and run.verdict != "Error" else None,
        "refused": refused_control(run) if finished and run.role == "control" and run.verdict != "Error" else None,
        "error_layer": run.error_layer, "exit_reason": run.exit_reason,
        "human_labels": ";".join(labels) or None,
        "steps": run.steps, "input_tokens": run.input_tokens, "output_tokens": run.output_tokens,
        "duration_s": run.duration_s, "started_at": as_utc(run.started_at), "finished_at": as_utc(run.finished_at),
        "sandbox_backend": run.sandbox_backend, "attempt": run.attempt,
    }


def rows(session: Session, batch_ids: Sequence[str] = (), hazards: Mapping[str, str] | None = None,
         mask: Mapping[str, str] | None = None, family: str = "", condition: str = "") -> Iterator[dict[str, Any]]:
    """The export's rows (of the given batches, family and condition; empty means any), oldest run first,
    read a page at a time."""
    hazards = hazards or {}
    names: dict[str, str] = {batch_id: name for batch_id, name in session.execute(select(Batch.id, Batch.name))}
    last: tuple[datetime, str] | None = None
    while True:
        query = select(Run).order_by(Run.created_at, Run.id).limit(PAGE)
        if batch_ids:
            query = query.where(Run.batch_id.in_(list(batch_ids)))
        if family:
            query = query.where(Run.family == family)
        if condition:
            query = query.where(Run.condition == condition)
        if last is not None:
            query = query.where((Run.created_at > last[0]) | ((Run.created_at == last[0]) & (Run.id > last[1])))
        page = list(session.scalars(query))
        if not page:
            return
        labels: dict[str, list[str]] = defaultdict(list)
        for run_id, label in session.execute(select(AnnotationRow.run_id, AnnotationRow.label).where(
                AnnotationRow.run_id.in_([r.id for r in page])).order_by(AnnotationRow.id)):
            if label:
                labels[run_id].append(label)
        for run in page:
            yield _row(run, names.get(run.batch_id, ""), hazards.get(run.scenario_id), labels[run.id], mask)
        last = (page[-1].created_at, page[-1].id)
        session.expunge_all()  # a long export holds one page of runs in memory, not all of them


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def write_csv(records: Iterable[dict[str, Any]], path: Path, columns: Mapping[str, str] = COLUMNS) -> int:
    count = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns))
        writer.writeheader()
        for record in records:
            writer.writerow({k: "" if v is None else _plain(v) for k, v in record.items()})
            count += 1
    return count


def write_jsonl(records: Iterable[dict[str, Any]], path: Path, columns: Mapping[str, str] = COLUMNS) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps({k: _plain(v) for k, v in record.items()}) + "\n")
            count += 1
    return count


def arrow_schema(columns: Mapping[str, str] = COLUMNS) -> Any:
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(),
             "timestamp": pa.timestamp("us", tz="UTC")}
    return pa.schema([(name, types[kind]) for name, kind in columns.items()])


def write_parquet(records: Iterable[dict[str, Any]], path: Path, columns: Mapping[str, str] = COLUMNS,
                  chunk: int = 10_000) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema, count, buffer = arrow_schema(columns), 0, []
    with pq.ParquetWriter(path, schema) as writer:
        for record in records:
            buffer.append(record)
            if len(buffer) >= chunk:
                writer.write_table(pa.Table.from_pylist(buffer, schema=schema))
                count, buffer = count + len(buffer), []
        if buffer or count == 0:
            writer.write_table(pa.Table.from_pylist(buffer, schema=schema))
            count += len(buffer)
    return count


WRITERS = {"csv": write_csv, "jsonl": write_jsonl, "parquet": write_parquet}


def format_of(path: Path, given: str | None) -> Format:
    """The format asked for, else the one the file name's suffix names."""
    chosen = (given or path.suffix.lstrip(".")).lower()
    if chosen not in FORMATS:
        raise ValueError(f"unknown export format {chosen or '(none)'!r} for {path}: use one of "
                         f"{', '.join(FORMATS)} (--format, or a file ending .csv, .jsonl or .parquet)")
    return chosen  # type: ignore[return-value]


def export(records: Iterable[dict[str, Any]], path: Path, fmt: Format, columns: Mapping[str, str] = COLUMNS) -> int:
    """Write ``records`` (rows with ``columns``) to ``path`` in ``fmt``; returns how many rows were written."""
    return WRITERS[fmt](records, path, columns)


JUDGEMENT_COLUMNS: dict[str, str] = {
    "run_id": "string", "batch_id": "string", "judge": "string", "judge_version": "string", "verdict": "string",
    "completed": "bool", "confidence": "float64", "is_current": "bool", "findings": "int64",
    "violations": "string", "rationale": "string", "created_at": "timestamp",
}
LABEL_COLUMNS: dict[str, str] = {
    "run_id": "string", "batch_id": "string", "annotator": "string", "label": "string", "note": "string",
    "checklist": "string", "created_at": "timestamp", "submitted_at": "timestamp",
}


def judgement_rows(session: Session, batch_ids: Sequence[str] = ()) -> Iterator[dict[str, Any]]:
    """Every judgement (current and superseded) of the runs of the given batches: one row each; ``violations``
    names the detectors whose findings were violations."""
    query = select(JudgementRow, Run.batch_id).join(Run, Run.id == JudgementRow.run_id).order_by(JudgementRow.id)
    if batch_ids:
        query = query.where(Run.batch_id.in_(list(batch_ids)))
    for judgement, batch_id in session.execute(query.execution_options(yield_per=PAGE)):
        found = judgement.findings or []
        yield {"run_id": judgement.run_id, "batch_id": batch_id, "judge": judgement.judge,
               "judge_version": judgement.judge_version, "verdict": judgement.verdict,
               "completed": judgement.completed, "confidence": judgement.confidence,
               "is_current": judgement.is_current, "findings": len(found),
               "violations": ";".join(dict.fromkeys(str(f.get("detector")) for f in found
                                                    if isinstance(f, dict) and f.get("kind") == "violation")) or None,
               "rationale": judgement.rationale, "created_at": as_utc(judgement.created_at)}


def label_rows(session: Session, batch_ids: Sequence[str] = ()) -> Iterator[dict[str, Any]]:
    """Every human label on the runs of the given batches, with its checklist answers as JSON."""
    query = select(AnnotationRow, Run.batch_id).join(Run, Run.id == AnnotationRow.run_id).order_by(AnnotationRow.id)
    if batch_ids:
        query = query.where(Run.batch_id.in_(list(batch_ids)))
    for label, batch_id in session.execute(query.execution_options(yield_per=PAGE)):
        yield {"run_id": label.run_id, "batch_id": batch_id, "annotator": label.annotator, "label": label.label,
               "note": label.note, "checklist": json.dumps(label.checklist or {}, sort_keys=True),
               "created_at": as_utc(label.created_at), "submitted_at": as_utc(label.submitted_at)}


def event_lines(events: Iterable[EventRow], hide_models: bool = False) -> Iterator[str]:
    """A run's events as JSON lines (seq, kind, step, ts, payload); ``hide_models`` blanks the model and
    provider of model calls for a viewer who may not see them."""
    for event in events:
        payload = dict(event.payload)
        if hide_models and event.kind == "model_call":
            payload.update({"model": "", "provider": ""})
            if isinstance(payload.get("response"), dict):
                payload["response"] = {k: v for k, v in payload["response"].items() if k != "model"}
        yield json.dumps({"seq": event.seq, "kind": event.kind, "step": event.step,
                          "ts": _plain(as_utc(event.ts)), "payload": payload}, default=str)
