"""Labels and checklist answers as CSV and JSONL files, one row per run × annotator × checklist item.

A label with no checklist answers (one given with ``review label``) is one row with an empty item. Each
row carries the checklist version and the hash of the trajectory that was labelled, so a file read
back elsewhere says what it was about. Reading groups the rows back into labels (one per run,
annotator and submission time) and names the file, line and field of anything wrong. Written here:
the row layout and the grouping; the parsing is the standard library's ``csv`` and ``json`` and the
checking is pydantic's.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from annotation.checklist import ChecklistAnswer

Format = Literal["csv", "jsonl"]
FIELDS = ("run_id", "scenario_id", "queue", "annotator", "source", "submitted_at", "blind_label", "final_label",
          "blind_evidence", "checklist_item", "answer", "answer_evidence", "checklist_version",
          "trajectory_sha256", "blind_seconds", "checklist_seconds", "note")


class ExchangeError(ValueError):
    """A file that cannot be read as labels; the message names the file, line and field."""


class ExchangeRow(BaseModel):
    """One row of an export file."""

    model_config = ConfigDict(extra="forbid")
    run_id: str = Field(min_length=1, max_length=32)
    scenario_id: str = ""
    queue: str = ""
    annotator: str = Field(min_length=1, max_length=100)
    source: str = ""
    submitted_at: datetime
    blind_label: str | None = None
    final_label: str = Field(min_length=1, max_length=40)
    blind_evidence: list[int] = []
    checklist_item: str = ""
    answer: str = ""
    answer_evidence: str = ""
    checklist_version: str = ""
    trajectory_sha256: str = ""
    blind_seconds: float | None = None
    checklist_seconds: float | None = None
    note: str = ""

    @field_validator("blind_label", "blind_seconds", "checklist_seconds", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("blind_evidence", mode="before")
    @classmethod
    def _evidence_list(cls, value: object) -> object:
        if isinstance(value, str):  # CSV: "3 9"
            return [int(part) for part in value.replace(",", " ").split()] if value.strip() else []
        return value


class LabelRecord(BaseModel):
    """One annotator's label on one run, with its checklist answers: what rows group back into."""

    run_id: str
    scenario_id: str = ""
    queue: str = ""
    annotator: str
    source: str = ""
    submitted_at: datetime
    blind_label: str | None = None
    final_label: str
    blind_evidence: list[int] = []
    checklist: dict[str, ChecklistAnswer] = {}
    checklist_version: str = ""
    trajectory_sha256: str = ""
    blind_seconds: float | None = None
    checklist_seconds: float | None = None
    note: str = ""
    #: where the record starts in the file it was read from (for error messages); 0 when not read
    line: int = 0

    def key(self) -> tuple[str, str, str]:
        return self.run_id, self.annotator, self.submitted_at.isoformat()


def rows_of(record: LabelRecord) -> list[ExchangeRow]:
    common = record.model_dump(exclude={"checklist", "line"})
    if not record.checklist:
        return [ExchangeRow(**common)]
    return [ExchangeRow(**common, checklist_item=item, answer=answer.answer, answer_evidence=answer.evidence)
            for item, answer in record.checklist.items()]


def _flat(row: ExchangeRow, fmt: Format) -> dict[str, object]:
    data = row.model_dump(mode="json")
    if fmt == "csv":
        data["blind_evidence"] = " ".join(str(n) for n in row.blind_evidence)
        data = {k: "" if v is None else v for k, v in data.items()}
    return data


def dumps(records: Iterable[LabelRecord], fmt: Format) -> str:
    rows = [row for record in records for row in rows_of(record)]
    if fmt == "jsonl":
        return "".join(json.dumps(_flat(row, fmt), ensure_ascii=False) + "\n" for row in rows)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(_flat(row, fmt))
    return out.getvalue()


def format_of(path: Path, given: str | None = None) -> Format:
    chosen = (given or path.suffix.lstrip(".")).lower()
    if chosen not in ("csv", "jsonl"):
        raise ExchangeError(f"{path}: say --format csv or jsonl (the name ends in {path.suffix or 'nothing'})")
    return chosen  # type: ignore[return-value]


def _raw_rows(text: str, fmt: Format, name: str) -> list[tuple[int, dict[str, object]]]:
    if fmt == "jsonl":
        rows: list[tuple[int, dict[str, object]]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ExchangeError(f"{name}:{number}: not JSON ({exc.msg})") from exc
            if not isinstance(value, dict):
                raise ExchangeError(f"{name}:{number}: a row must be a JSON object")
            rows.append((number, value))
        return rows
    reader = csv.DictReader(io.StringIO(text))
    missing = [f for f in ("run_id", "annotator", "submitted_at", "final_label") if f not in (reader.fieldnames or [])]
    if missing:
        raise ExchangeError(f"{name}:1: the header lacks {', '.join(missing)}")
    return [(reader.line_num, dict(row)) for row in reader]


def loads(text: str, fmt: Format, name: str = "<input>") -> list[LabelRecord]:
    """Rows read and grouped into labels; the first problem raises, naming the line and the field."""
    records: dict[tuple[str, str, str], LabelRecord] = {}
    for number, raw in _raw_rows(text, fmt, name):
        try:
            row = ExchangeRow.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "row"
            raise ExchangeError(f"{name}:{number}: {field}: {first['msg']}") from exc
        record = LabelRecord(**row.model_dump(exclude={"checklist_item", "answer", "answer_evidence"}), line=number)
        key = record.key()
        held = records.setdefault(key, record)
        if held is not record and held.model_dump(exclude={"checklist", "line"}) != record.model_dump(
                exclude={"checklist", "line"}):
            raise ExchangeError(f"{name}:{number}: the row's label fields differ from line {held.line}'s for the same "
                                "run, annotator and time")
        if row.checklist_item:
            if row.checklist_item in held.checklist:
                raise ExchangeError(f"{name}:{number}: checklist_item: {row.checklist_item} answered twice")
            try:
                held.checklist[row.checklist_item] = ChecklistAnswer(answer=row.answer, evidence=row.answer_evidence)
            except ValidationError as exc:
                raise ExchangeError(f"{name}:{number}: answer: {exc.errors()[0]['msg']}") from exc
    return list(records.values())
