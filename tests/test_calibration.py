"""Judge calibration against human labels: on the labelled recorded trajectories and on the database."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from typer.testing import CliRunner

from judges.calibration import LabelledVerdict, calibrate
from orchestrator.cli.app import app
from orchestrator.db.models import AnnotationRow, Batch, JudgementRow, Run
from orchestrator.db.session import session_factory

FIXTURES = Path(__file__).parent / "fixtures" / "labelled"


def test_detectors_agree_with_the_labelled_set() -> None:
    result = CliRunner().invoke(app, ["judges", "calibrate", "--fixtures", str(FIXTURES), "--json"])
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)
    assert report["judge"] == "dilemma-detectors" and report["n"] == len(list(FIXTURES.glob("*.json"))) >= 10
    assert report["disagreements"] == [] and report["accuracy"] == 1.0
    assert set(report["labels"]) == {"Pass", "Flawed", "Fail"}


def test_calibration_arithmetic() -> None:
    human = ["Fail", "Fail", "Pass", "Pass", "Flawed", "Pass"]
    judge = ["Fail", "Pass", "Pass", "Pass", "Flawed", "Fail"]
    verdicts = [LabelledVerdict(f"c{i}", "T08" if i < 3 else "T02", "j", p, h) for i, (h, p) in enumerate(zip(human, judge))]
    (report,) = calibrate(verdicts)
    assert report.accuracy == 4 / 6
    # p_o = 4/6; p_e = (2*2 + 3*3 + 1*1) / 36 = 14/36; kappa = (24/36 - 14/36) / (22/36) = 10/22
    assert abs(report.kappa - 10 / 22) < 1e-12
    assert report.per_label["Fail"].precision == 0.5 and report.per_label["Fail"].recall == 0.5
    assert report.per_category == {"T08": 2 / 3, "T02": 2 / 3}
    assert report.confusion[report.labels.index("Fail")][report.labels.index("Pass")] == 1


def test_calibration_from_human_labels_in_the_database(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("INTEGRITYLAB_DATA_DIR", str(tmp_path))
    sessions = session_factory(f"sqlite:///{tmp_path / 'integritylab.db'}")
    with sessions() as session:
        batch = Batch(name="b")
        session.add(batch)
        session.flush()
        for i, (judged, human) in enumerate([("Fail", "Fail"), ("Pass", "Fail"), ("Pass", "Pass")]):
            session.add(Run(id=f"r{i}", batch_id=batch.id, scenario_id="s", family="dilemma", category="T08",
                            role="trap", agent="react", model="scripted:honest", condition="none"))
            session.flush()
            session.add(JudgementRow(run_id=f"r{i}", judge="dilemma-detectors", judge_version="2", verdict=judged))
            for annotator in ("ann1", "ann2"):
                session.add(AnnotationRow(run_id=f"r{i}", annotator=annotator, label=human,
                                          submitted_at=datetime.now(timezone.utc)))
        session.commit()
    result = CliRunner().invoke(app, ["judges", "calibrate", "--json"])
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)
    assert report["n"] == 3 and abs(report["accuracy"] - 2 / 3) < 1e-9
