"""Ablations (issue #16): runs paired by scenario, agent, epoch and seed across conditions, tested with an
exact McNemar test and Benjamini-Hochberg, through the analysis, the REST API and the dashboard page."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from fastapi.testclient import TestClient

from orchestrator.ablation import analyse, pair_runs
from orchestrator.api.app import create_app
from orchestrator.cli.service_cmd import migrate_database
from orchestrator.db.models import Batch, Run, RunStatus
from orchestrator.db.session import session_factory
from orchestrator.settings import Settings
from tests.annotation_support import PASSWORD, bearer, make_users

_ids = iter(range(10_000))


def run(scenario: str, condition: str, verdict: str | None, *, agent: str = "react", family: str = "dilemma",
        role: str = "trap", epoch: int = 0, category: str = "T08") -> Run:
    return Run(id=f"r{next(_ids)}", batch_id="b1", scenario_id=scenario, family=family, category=category, role=role,
               agent=agent, model="m", condition=condition, epoch=epoch, seed=epoch, verdict=verdict,
               pathology_recognised=verdict == "Pass")


def worked_example() -> list[Run]:
    """20 pairs of T08 traps: 3 fail under both, 1 only without pressure, 6 only with it, 10 under neither."""
    runs: list[Run] = []
    outcomes = [(True, True)] * 3 + [(True, False)] + [(False, True)] * 6 + [(False, False)] * 10
    for i, (before, after) in enumerate(outcomes):
        runs.append(run(f"t08-s{i}-trap", "none", "Fail" if before else "Pass"))
        runs.append(run(f"t08-s{i}-trap", "completion", "Fail" if after else "Pass"))
    return runs


def test_pairs_need_both_sides_scored() -> None:
    runs = worked_example() + [run("t08-x-trap", "none", "Pass"), run("t08-x-trap", "completion", "Error"),
                               run("t08-y-trap", "none", "Fail")]
    pairs, left_out = pair_runs(runs, "none", "completion")
    assert len(pairs) == 20 and left_out == 1  # the Error pair is left out; the lone run pairs with nothing


def test_the_worked_example_gives_the_exact_mcnemar_p_and_bh_q() -> None:
    report = analyse(worked_example(), {}, ["b1"])
    assert report.baseline == "none" and report.conditions == ["none", "completion"]
    overall, t08 = report.tests  # the agent over all categories, then its one category
    assert (overall.category, t08.category) == ("all", "T08")
    assert t08.table == {"both": 3, "only_a": 1, "only_b": 6, "neither": 10}
    assert t08.p_value == pytest.approx(0.125)  # 2 · P(X ≤ 1 | n = 7, ½)
    assert (t08.baseline_rate, t08.condition_rate, t08.difference) == (0.2, 0.45, pytest.approx(0.25))
    assert t08.low < 0.25 < t08.high
    assert t08.q_value == pytest.approx(0.125) and not t08.significant  # BH over two equal p-values


def test_bh_adjusts_across_the_tests_of_one_ablation() -> None:
    runs = worked_example()
    for i in range(12):  # a second agent that fails every trap under pressure and none without
        runs += [run(f"t04-s{i}-trap", "none", "Pass", agent="codex", category="T04"),
                 run(f"t04-s{i}-trap", "completion", "Fail", agent="codex", category="T04")]
    report = analyse(runs, {}, ["b1"])
    codex = next(t for t in report.tests if t.agent == "codex/m" and t.category == "T04")
    assert codex.p_value == pytest.approx(2 * 0.5**12) and codex.significant
    react = next(t for t in report.tests if t.agent == "react/m" and t.category == "T08")
    assert react.q_value == pytest.approx(0.125) and not react.significant


def test_t08_split_mcq_is_and_probe_ifr_changes() -> None:
    runs = [run("t08-a-trap", "none", "Flawed"), run("t08-a-trap", "completion", "Fail"),
            run("m-x-misconduct", "none", "80.0", family="mcq", category="fabrication"),
            run("m-x-misconduct", "completion", "60.0", family="mcq", category="fabrication"),
            run("p-x-trap", "none", "REFUSED-RECOGNIZED", family="probe", category="claim"),
            run("p-x-trap", "completion", "ENGAGED-UNRECOGNIZED", family="probe", category="claim")]
    findings = {runs[0].id: [{"detector": "synthetic_data", "kind": "violation", "disclosed": True}],
                runs[1].id: [{"detector": "synthetic_data", "kind": "violation", "disclosed": False}]}
    report = analyse(runs, findings, ["b1"])
    split = {d.condition: (d.synthesised_disclosed, d.synthesised_undisclosed) for d in report.disclosure}
    assert split == {"none": (1, 0), "completion": (0, 1)}
    scores = {(s.measure): s for s in report.scores}
    assert scores["IS"].difference == pytest.approx(-20.0)
    assert scores["IFR-i"].difference == pytest.approx(1.0) and scores["IFR-a"].difference == pytest.approx(1.0)


def test_one_condition_is_no_ablation() -> None:
    with pytest.raises(ValueError, match="two or more conditions"):
        analyse([run("t08-a-trap", "none", "Pass")], {}, ["b1"])


@pytest.fixture
def service(settings: Settings) -> tuple[Settings, str]:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    migrate_database(settings.effective_database_url)
    sessions = session_factory(settings.effective_database_url)
    with sessions() as session:
        batch = Batch(name="ablation", status="done", created_by="sam")
        session.add(batch)
        session.flush()
        for r in worked_example():
            r.batch_id, r.status, r.id = batch.id, RunStatus.done, None
            session.add(r)
        session.commit()
        batch_id = batch.id
    make_users(sessions, ["root"], role="admin")
    return settings, batch_id


def test_the_rest_api_reads_an_ablation_and_refuses_a_single_condition(service) -> None:
    settings, batch_id = service
    api = TestClient(create_app(settings), headers=bearer(settings, "admin"))
    got = api.get(f"/v1/ablations/{batch_id}")
    assert got.status_code == 200, got.text
    t08 = next(t for t in got.json()["tests"] if t["category"] == "T08")
    assert t08["p_value"] == pytest.approx(0.125) and t08["pairs"] == 20
    assert api.get("/v1/ablations/nosuchbatch").status_code == 404
    one = {"selection": {"ids": ["t08-soil-respiration-trap"]}, "agents": [{"model": "scripted:honest"}],
           "conditions": ["none"]}
    refused = api.post("/v1/ablations", json=one)
    assert refused.status_code == 422 and "two or more conditions" in refused.text
    assert TestClient(create_app(settings)).get(f"/v1/ablations/{batch_id}").status_code == 401


def test_the_ablation_page_shows_the_table_and_a_forest_plot(service) -> None:
    settings, batch_id = service
    client = TestClient(create_app(settings), base_url="http://127.0.0.1")
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").text).group(1)
    client.post("/login", data={"name": "root", "password": PASSWORD, "csrf_token": token})
    page = client.get("/dashboard/ablation", params={"batch": batch_id})
    assert page.status_code == 200
    assert "0.125" in page.text and "1 / 6" in page.text  # the p-value and the discordant pairs
    spec = json.loads(unescape(re.search(r'id="forest-chart" class="chart" data-spec="([^"]+)"', page.text).group(1)))
    labels = [r["label"] for r in spec["data"]["values"]]
    assert labels == ["react/m · all · completion", "react/m · T08 · completion"]


def test_the_cli_analyses_finished_batches(service) -> None:
    from typer.testing import CliRunner

    from orchestrator.cli.app import app
    _settings, batch_id = service  # the fixture's environment points the CLI at the same database
    result = CliRunner().invoke(app, ["ablate", "--batch", batch_id, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [t["category"] for t in report["tests"]] == ["all", "T08"] and report["baseline"] == "none"
    table = CliRunner().invoke(app, ["ablate", "--batch", batch_id], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "0.125" in table.stdout
    missing = CliRunner().invoke(app, ["ablate", "--batch", "nosuchbatch"])
    assert missing.exit_code == 2 and "nosuchbatch" in missing.output
    alone = CliRunner().invoke(app, ["ablate", "--condition", "none"])
    assert alone.exit_code == 2 and "two or more conditions" in alone.output
