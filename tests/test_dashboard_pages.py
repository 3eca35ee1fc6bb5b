"""The dashboard pages (issue #16) through the app: the overview's rates and intervals are the scoreboard's,
a heatmap cell links to exactly its runs, and annotators see no dashboard until their labels are in, then
only pseudonyms while a blinded queue exists."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from fastapi.testclient import TestClient

from judges.intervals import wilson
from orchestrator.api.app import create_app
from orchestrator.cli.service_cmd import migrate_database
from orchestrator.db.models import AnnotationQueue, Batch, QueueItem, Run, RunStatus
from orchestrator.db.session import session_factory
from orchestrator.runs import utcnow
from orchestrator.settings import Settings
from tests.annotation_support import PASSWORD, make_users

#: (agent, scenario, role, verdict, recognised, completed)
RUNS = [
    ("react", "t01-kiln-energy-forecast-trap", "trap", "Pass", True, True),
    ("react", "t01-sepsis-warning-trap", "trap", "Fail", False, True),
    ("react", "t02-panel-attrition-trap", "trap", "Flawed", True, True),
    ("react", "t02-panel-attrition-control", "control", "Pass", None, True),
    ("codex", "t01-kiln-energy-forecast-trap", "trap", "Fail", False, True),
    ("codex", "t01-sepsis-warning-trap", "trap", "Fail", False, True),
    ("codex", "t02-panel-attrition-trap", "trap", "Pass", True, True),
    ("codex", "t02-panel-attrition-control", "control", "Pass", None, False),
]


@pytest.fixture
def seeded(settings: Settings) -> tuple[Settings, str]:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    migrate_database(settings.effective_database_url)
    sessions = session_factory(settings.effective_database_url)
    with sessions() as session:
        batch = Batch(name="dashboard test", created_by="sam", status="done")
        session.add(batch)
        session.flush()
        for agent, scenario, role, verdict, recognised, completed in RUNS:
            session.add(Run(batch_id=batch.id, scenario_id=scenario, family="dilemma", category=scenario[:3].upper(),
                            role=role, agent=agent, model="scripted:x", condition="none", status=RunStatus.done,
                            verdict=verdict, pathology_recognised=recognised, completed=completed, duration_s=12.0,
                            finished_at=utcnow()))
        session.commit()
        batch_id = batch.id
    make_users(sessions, ["root"], role="admin")
    make_users(sessions, ["ada"])
    return settings, batch_id


def blind_queue(session, run_id: str, completed: bool = False) -> int:
    """A blinded queue holding one run; returns the item's id."""
    queue = AnnotationQueue(name="blind", blinded=True)
    session.add(queue)
    session.flush()
    item = QueueItem(queue_id=queue.id, run_id=run_id, needed=1, completed_at=utcnow() if completed else None)
    session.add(item)
    session.commit()
    return item.id


def signed_in(settings: Settings, name: str) -> TestClient:
    client = TestClient(create_app(settings), base_url="http://127.0.0.1")
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").text).group(1)
    assert client.post("/login", data={"name": name, "password": PASSWORD, "csrf_token": token},
                       follow_redirects=False).status_code == 303
    return client


def spec_of(html: str, chart: str) -> dict:
    found = re.search(rf'id="{chart}" class="chart" data-spec="([^"]+)"', html)
    assert found, f"no {chart} on the page"
    return json.loads(unescape(found.group(1)))


def test_the_dashboard_needs_a_signed_in_user(seeded) -> None:
    settings, _ = seeded
    answer = TestClient(create_app(settings)).get("/dashboard", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"].startswith("/login?next=")


def test_the_overview_shows_the_scoreboard_with_intervals(seeded) -> None:
    settings, batch_id = seeded
    page = signed_in(settings, "root").get("/dashboard", params={"batch": batch_id}).text
    rows = {m.group(1): m.group(0) for m in re.finditer(r"<tr>\s*<td>([^<]+/scripted:x)</td>.*?</tr>", page, re.DOTALL)}
    assert set(rows) == {"react/scripted:x", "codex/scripted:x"}
    # react: 1 of 3 traps resisted (the Fail named nothing), Wilson [0.06, 0.79]; codex the same count
    low, high = wilson(1, 3).low, wilson(1, 3).high
    assert f"0.33 <span class=\"ci\">[{low:.2f}, {high:.2f}]</span>" in rows["react/scripted:x"]
    assert "0.00 <span" in rows["react/scripted:x"] and "1.00 <span" in rows["codex/scripted:x"]  # over-refusal
    points = {p["label"]: p for p in spec_of(page, "resistance-chart")["data"]["values"]}
    assert points["react/scripted:x · none"]["estimate"] == pytest.approx(1 / 3)
    assert points["react/scripted:x · none"]["low"] == pytest.approx(low)
    # overlapping intervals: one tie group, not a strict order
    groups = {name: re.search(r"<td>none</td>\s*<td>([^<]+)</td>", row).group(1) for name, row in rows.items()}
    assert groups == {"react/scripted:x": "1", "codex/scripted:x": "1"}


def test_a_heatmap_cell_links_to_exactly_its_runs(seeded) -> None:
    settings, batch_id = seeded
    admin = signed_in(settings, "root")
    page = admin.get("/dashboard/heatmap", params={"batch": batch_id}).text
    cells = {(c["agent"], c["category"]): c for c in spec_of(page, "heatmap-chart")["data"]["values"]}
    cell = cells[("codex/scripted:x", "T01")]
    assert cell["rate"] == 1.0 and cell["n"] == 2
    runs = admin.get(unescape(cell["href"])).text
    listed = re.findall(r"<td>(t0\d-[a-z-]+)</td>", runs)
    assert sorted(listed) == ["t01-kiln-energy-forecast-trap", "t01-sepsis-warning-trap"]
    assert "react/scripted:x" not in runs


def test_annotators_wait_for_their_labels_and_then_see_pseudonyms(seeded) -> None:
    settings, batch_id = seeded
    sessions = session_factory(settings.effective_database_url)
    with sessions() as session:
        item_id = blind_queue(session, session.query(Run).first().id)
    ada = signed_in(settings, "ada")
    refused = ada.get("/dashboard")
    assert refused.status_code == 403 and "1 queue item(s) still wait for you" in refused.text
    assert "scripted:x" not in refused.text
    with sessions() as session:
        session.get(QueueItem, item_id).completed_at = utcnow()
        session.commit()
    page = ada.get("/dashboard", params={"batch": batch_id})
    assert page.status_code == 200
    assert "scripted:x" not in page.text and "agent 1" in page.text and "agent 2" in page.text
    heat = ada.get("/dashboard/heatmap", params={"batch": batch_id}).text
    assert "scripted:x" not in heat and "scripted" not in unescape(heat)
    # the admin still sees the names
    assert "codex/scripted:x" in signed_in(settings, "root").get("/dashboard").text


def test_the_run_page_links_findings_to_events_and_compare_aligns_steps(seeded) -> None:
    from orchestrator.artifacts import ArtifactStore
    from orchestrator.db.models import JudgementRow
    from tests.annotation_support import seed_run

    settings, _ = seeded
    sessions = session_factory(settings.effective_database_url)
    store = ArtifactStore(settings.artifact_dir)
    second, first = seed_run(sessions, store), seed_run(sessions, store)  # "first" has row ids past its seqs
    with sessions() as session:
        from orchestrator.db.models import EventRow
        cited = session.query(EventRow).filter(EventRow.run_id == first, EventRow.seq == 9).one()
        session.add(JudgementRow(run_id=first, judge="dilemma-detectors", judge_version="3", verdict="Fail",
                                 findings=[{"detector": "unsupported_numbers", "kind": "violation",
                                            "summary": "a number no code printed", "event_ids": [cited.id],
                                            "quotes": ["4.43"], "disclosed": False}], is_current=True))
        assert cited.id != cited.seq
        session.get(Run, second).batch_id = session.get(Run, first).batch_id  # one batch: siblings
        session.commit()
    admin = signed_in(settings, "root")
    page = admin.get(f"/dashboard/runs/{first}").text
    assert 'class="cites" href="#e9"' in page and "unsupported_numbers" in page  # cited by row id, linked by seq and "<q>4.43</q>" in page
    assert 'id="e9"' in page or 'hx-get' in page  # the event is on the page or will be paged in
    assert f"/dashboard/compare?a={first}&amp;b={second}" in page
    fragment = admin.get(f"/dashboard/runs/{first}/events", params={"find": "exit"})
    assert fragment.status_code == 200 and "found-e" in fragment.text
    assert admin.get(f"/dashboard/runs/{first}/files/report/report.md").status_code == 200
    assert admin.get(f"/dashboard/runs/{first}/files/nope.txt").status_code == 404
    compare = admin.get("/dashboard/compare", params={"a": first, "b": second}).text
    rows = re.findall(r'<tr class="step-row"><td class="step">([^<]+)</td>', compare)
    assert rows and rows == sorted(set(rows), key=lambda s: (s != "—", int(s) if s.isdigit() else -1))
    assert compare.count('class="verdict"') == 2
    assert admin.get("/dashboard/runs/nosuchrun").status_code == 404


def test_the_batch_page_counts_and_stability_over_epochs(seeded) -> None:
    settings, batch_id = seeded
    sessions = session_factory(settings.effective_database_url)
    with sessions() as session:  # a second epoch: react repeats its verdicts, codex changes one
        for agent, scenario, role, verdict, recognised, completed in RUNS:
            if agent == "codex" and scenario == "t02-panel-attrition-trap":
                verdict, recognised = "Fail", False
            session.add(Run(batch_id=batch_id, scenario_id=scenario, family="dilemma", category=scenario[:3].upper(),
                            role=role, agent=agent, model="scripted:x", condition="none", epoch=1, seed=1,
                            status=RunStatus.done, verdict=verdict, pathology_recognised=recognised,
                            completed=completed, error_layer=None))
        session.add(Run(batch_id=batch_id, scenario_id="t05-seismic-catalog-trap", family="dilemma", category="T05",
                        role="trap", agent="react", model="scripted:x", condition="none", status=RunStatus.error,
                        verdict="Error", error_layer="sandbox"))
        session.add(Run(batch_id=batch_id, scenario_id="t05-seismic-catalog-control", family="dilemma",
                        category="T05", role="control", agent="react", model="scripted:x", condition="none",
                        status=RunStatus.queued))
        session.commit()
    admin = signed_in(settings, "root")
    page = admin.get(f"/dashboard/batches/{batch_id}").text
    assert "17 of 18</strong> runs finished" in page and 'hx-trigger="every 3s"' in page  # one still queued
    assert re.search(r"<td>sandbox</td><td>1</td>", page)
    fragment = admin.get(f"/dashboard/batches/{batch_id}", params={"fragment": 1}).text
    assert fragment.lstrip().startswith('<div id="live"')
    overview = admin.get("/dashboard", params={"batch": batch_id}).text
    stable = dict(re.findall(r"<tr><td>(\w+/scripted:x)</td><td>none</td><td>4</td><td>\d</td><td>([\d.]+)</td>",
                             overview))
    assert stable == {"codex/scripted:x": "0.75", "react/scripted:x": "1.00"}
    assert admin.get("/dashboard/batches/nosuch").status_code == 404


def test_the_overview_shows_mean_edi_the_parts_of_is_and_cost(seeded) -> None:
    from agents.gateway.budget import ModelPrice
    from orchestrator.db.models import JudgementRow

    settings, batch_id = seeded
    sessions = session_factory(settings.effective_database_url)
    with sessions() as session:
        def add(scenario: str, family: str, verdict: str, details: dict, model: str = "openai:gpt-x") -> None:
            run = Run(batch_id=batch_id, scenario_id=scenario, family=family, category="x", role="trap",
                      agent="single_shot", model=model, condition="none", status=RunStatus.done, verdict=verdict,
                      input_tokens=1_000_000, output_tokens=100_000, finished_at=utcnow())
            session.add(run)
            session.flush()
            session.add(JudgementRow(run_id=run.id, judge="j", judge_version="1", verdict=verdict, details=details))
            old = JudgementRow(run_id=run.id, judge="j", judge_version="0", verdict=verdict, details={"edi": 9.0},
                               is_current=False)  # a superseded judgement counts for nothing
            session.add(old)

        add("p-a", "probe", "ENGAGED-UNRECOGNIZED", {"edi": 0.2})
        add("p-b", "probe", "REFUSED-RECOGNIZED", {"edi": 0.6})
        add("m-a", "mcq", "70.00", {"q1": 1.0, "q2": 0.5, "q3": 0.6})
        add("m-b", "mcq", "50.00", {"q1": 0.0, "q2": 1.0, "q3": 0.5})
        session.commit()
    settings.model_prices = {"openai:*": ModelPrice(input_per_mtok=2.5, output_per_mtok=10)}
    page = signed_in(settings, "root").get("/dashboard", params={"batch": batch_id}).text
    row = re.search(r"<tr>\s*<td>single_shot/openai:gpt-x</td>.*?</tr>", page, re.DOTALL).group(0)
    assert '<td class="edi">0.400</td>' in row  # (0.2 + 0.6) / 2
    assert '<td class="is-parts">0.50 / 0.75 / 0.55</td>' in row
    assert '<td class="cost">14.0000</td>' in row  # 4 runs × (1M × $2.5 + 0.1M × $10) per million
    react = re.search(r"<tr>\s*<td>react/scripted:x</td>.*?</tr>", page, re.DOTALL).group(0)
    assert '<td class="cost">0.0000</td>' in react and '<td class="edi">—</td>' in react  # scripted: free
