"""Export / import of labels (issue #15 item 8): one row per run × annotator × checklist item with the checklist
version and the trajectory hash, as CSV and JSONL, from the CLI and the page; importing a file twice changes
nothing, and a bad file names its line and imports nothing."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from annotation.exchange import ExchangeError, dumps, loads
from orchestrator import annotation_store as queue
from orchestrator.annotation_exchange import export_records, import_records
from orchestrator.artifacts import ArtifactStore
from orchestrator.calibration_data import verdicts_from_database
from orchestrator.cli.app import app
from orchestrator.db.models import AnnotationHistory, AnnotationRow, EventRow, JudgementRow, Run
from orchestrator.db.session import session_factory
from tests.annotation_support import seed_run
from tests.test_annotation_queue import CATALOG, label_fully, new_queue, users


def labelled(tmp_path: Path) -> tuple[Path, Path, str]:
    """A run labelled by two annotators in database one; database two is a copy made before any label."""
    one, two = tmp_path / "one.sqlite3", tmp_path / "two.sqlite3"
    sessions = session_factory(f"sqlite:///{one}")
    run_id = seed_run(sessions, ArtifactStore(tmp_path / "artifacts"))
    with sessions() as session:
        session.add(JudgementRow(run_id=run_id, judge="dilemma-detectors", judge_version="t", verdict="Fail"))
        session.commit()
    sessions.kw["bind"].dispose()
    shutil.copy(one, two)
    sessions = session_factory(f"sqlite:///{one}")
    new_queue(sessions, [run_id], n=2)
    a, b = users(sessions, 2)
    label_fully(sessions, queue.next_assignment(sessions, a.id, "q"), a, "Pass")
    label_fully(sessions, queue.next_assignment(sessions, b.id, "q"), b, "Flawed")
    return one, two, run_id


def counts(url: str) -> tuple[int, int]:
    with session_factory(url)() as session:
        return (session.scalar(select(func.count()).select_from(AnnotationRow)) or 0,
                session.scalar(select(func.count()).select_from(AnnotationHistory)) or 0)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_then_import_elsewhere_then_again_changes_nothing(tmp_path: Path, fmt: str) -> None:
    one, two, run_id = labelled(tmp_path)
    with session_factory(f"sqlite:///{one}")() as session:
        records = export_records(session)
    text = dumps(records, fmt)  # type: ignore[arg-type]
    n_items = len(CATALOG.get(records[0].scenario_id).rubric().checklist)
    rows = list(csv.DictReader(io.StringIO(text))) if fmt == "csv" else [json.loads(x) for x in text.splitlines()]
    assert len(rows) == 2 * n_items  # run × annotator × checklist item
    assert {r["annotator"] for r in rows} == {"annotator0", "annotator1"}
    assert all(len(r["trajectory_sha256"]) == 64 and len(r["checklist_version"]) == 16 for r in rows)
    assert {r["queue"] for r in rows} == {"q"} and {r["answer"] for r in rows} == {"no"}
    back = loads(text, fmt, "labels")  # type: ignore[arg-type]
    assert [r.model_dump(exclude={"line"}) for r in back] == [r.model_dump(exclude={"line"}) for r in records]
    # into the same database: everything is recorded already
    with session_factory(f"sqlite:///{one}")() as session:
        before = counts(f"sqlite:///{one}")
        outcome = import_records(session, back, "labels", actor="test")
        session.commit()
    assert (outcome.added, outcome.unchanged) == (0, 2) and counts(f"sqlite:///{one}") == before
    # into the copy: added once, then unchanged
    for expected in ((2, 0), (0, 2)):
        with session_factory(f"sqlite:///{two}")() as session:
            outcome = import_records(session, loads(text, fmt, "labels"), "labels", actor="test")  # type: ignore[arg-type]
            session.commit()
        assert (outcome.added, outcome.unchanged) == expected
    assert counts(f"sqlite:///{two}") == (2, 2)  # two labels, two 'import' history entries
    with session_factory(f"sqlite:///{two}")() as session:
        assert len(verdicts_from_database(session)) == 1  # imported labels feed judge calibration
        again = export_records(session)
        assert [r.model_dump(exclude={"source", "queue", "blind_evidence"}) for r in again] == [
            r.model_dump(exclude={"source", "queue", "blind_evidence"}) for r in records]
        assert session.get(Run, run_id).verdict == "Fail"  # an import never sets a verdict


def test_a_bad_file_names_its_line_and_imports_nothing(tmp_path: Path) -> None:
    one, two, run_id = labelled(tmp_path)
    with session_factory(f"sqlite:///{one}")() as session:
        good = dumps(export_records(session), "jsonl")
    lines = good.splitlines()
    tampered = [json.loads(x) for x in lines]
    cases = {
        "unknown run": (lines + [json.dumps({**tampered[0], "run_id": "nosuchrun"})], "no run 'nosuchrun'"),
        "label": (lines + [json.dumps({**tampered[0], "annotator": "eve", "final_label": "Maybe"})], "final_label"),
        "trajectory": ([json.dumps({**t, "trajectory_sha256": "0" * 64}) for t in tampered], "another trajectory"),
        "answer": (lines[:-1] + [json.dumps({**tampered[-1], "answer": "perhaps"})], "answer"),
        "json": (lines + ["{not json"], "not JSON"),
        "field": (lines + [json.dumps({**tampered[0], "submitted_at": "yesterday"})], "submitted_at"),
    }
    for name, (rows, message) in cases.items():
        with session_factory(f"sqlite:///{two}")() as session, pytest.raises(ExchangeError) as caught:
            import_records(session, loads("\n".join(rows), "jsonl", "bad.jsonl"), "bad.jsonl", actor="test")
        assert message in str(caught.value) and "bad.jsonl:" in str(caught.value), name
    assert counts(f"sqlite:///{two}") == (0, 0)
    # the line named is the offending one
    with pytest.raises(ExchangeError, match=rf"bad.jsonl:{len(lines) + 1}: not JSON"):
        loads("\n".join(lines + ["{not json"]), "jsonl", "bad.jsonl")
    # a recorded label contradicted: refused in the database that holds it
    contradicted = [json.dumps({**t, "note": "edited"}) for t in tampered]
    with session_factory(f"sqlite:///{one}")() as session, pytest.raises(ExchangeError, match="differently"):
        import_records(session, loads("\n".join(contradicted), "jsonl", "x.jsonl"), "x.jsonl", actor="test")
    with pytest.raises(ExchangeError, match="header lacks"):
        loads("run_id,annotator\nr,a\n", "csv", "short.csv")
    with session_factory(f"sqlite:///{two}")() as session:
        assert session.scalar(select(func.count()).select_from(EventRow)) > 0  # the copy does hold the run
        assert session.get(Run, run_id) is not None


def test_the_cli_exports_and_imports_idempotently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.settings import Settings

    data = tmp_path / "data"
    monkeypatch.setenv("INTEGRITYLAB_DATA_DIR", str(data))
    monkeypatch.delenv("INTEGRITYLAB_DATABASE_URL", raising=False)
    url = Settings.from_env().effective_database_url
    data.mkdir()
    one, two, _run = labelled(tmp_path)
    shutil.copy(two, url.removeprefix("sqlite:///"))  # the CLI's database: the run, no labels yet
    exported = tmp_path / "labels.csv"
    monkeypatch.setenv("INTEGRITYLAB_DATABASE_URL", f"sqlite:///{one}")
    made = CliRunner().invoke(app, ["annotations", "export", "-o", str(exported)])
    assert made.exit_code == 0 and "2 labels exported" in made.output, made.output
    monkeypatch.delenv("INTEGRITYLAB_DATABASE_URL")
    first = CliRunner().invoke(app, ["annotations", "import", str(exported)])
    assert first.exit_code == 0 and "2 labels added, 0 already recorded" in first.output, first.output
    second = CliRunner().invoke(app, ["annotations", "import", str(exported)])
    assert second.exit_code == 0 and "0 labels added, 2 already recorded" in second.output
    assert counts(url)[0] == 2
    broken = tmp_path / "broken.csv"
    broken.write_text(exported.read_text().replace("Flawed", "Dubious"))
    refused = CliRunner().invoke(app, ["annotations", "import", str(broken)])
    said = "".join(refused.output.split())  # the console wraps long lines
    assert refused.exit_code == 2 and "broken.csv:" in said and "final_label" in said
    assert counts(url)[0] == 2
