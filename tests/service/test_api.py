"""The REST API in-process (FastAPI TestClient) over real PostgreSQL and a private Redis.

Runs are executed in this process through the worker's plain functions, so
events, artifacts and judgements are real without starting a worker.
"""

from __future__ import annotations

import json
import threading

import httpx
import pytest
import redis
import yaml
from fastapi.testclient import TestClient
from sqlalchemy import func, select

import tests.service.slow_provider  # noqa: F401 - registers slow: / flaky: / broken: for validation
from orchestrator import worker
from orchestrator.api import create_app
from orchestrator.db.models import AuditEntry, Batch, IdempotencyKey, JudgementRow, Run
from orchestrator.execution import RunContext
from tests.conftest import requires_bwrap
from tests.service.conftest import (
    CONTROL, TEST_PACK, TRAP, admin_token, requires_postgres, requires_redis, service_settings,
)

pytestmark = [requires_postgres, requires_redis]
HONEST = {"selection": {"ids": [TRAP]}, "agents": [{"agent": "react", "model": "scripted:honest"}]}


@pytest.fixture(scope="module")
def api(database_url, redis_server, tmp_path_factory):
    settings = service_settings(database_url, redis_server.url, tmp_path_factory.mktemp("api-data"))
    app = create_app(settings)
    with TestClient(app, raise_server_exceptions=False) as client:
        client.app_state = app.state.service  # type: ignore[attr-defined]
        client.redis = redis.Redis.from_url(redis_server.url)  # type: ignore[attr-defined]
        client.admin = {"Authorization": f"Bearer {admin_token(database_url, 'admin', 'ada')}"}  # type: ignore[attr-defined]
        client.annotator = {"Authorization": f"Bearer {admin_token(database_url, 'annotator', 'ann')}"}  # type: ignore[attr-defined]
        yield client


def _count(api, model) -> int:  # noqa: ANN001
    with api.app_state.sessions() as session:
        return session.scalar(select(func.count()).select_from(model)) or 0


def _execute(api, run_ids: list[str]) -> None:  # noqa: ANN001
    state = api.app_state
    ctx = worker.WorkerContext(
        run=RunContext(sessions=state.sessions, store=state.store, catalog=state.catalog, backend="bwrap"),
        settings=state.settings, enqueue_judge=lambda _run_id: None)
    for run_id in run_ids:
        assert worker.attempt_run(ctx, run_id).status == "judging"
        assert worker.judge_attempt(ctx, run_id, final=True).status in ("done", "error")


def test_openapi_and_docs_are_served_without_a_cdn(api) -> None:
    page = api.get("/docs")
    assert page.status_code == 200 and "/openapi.json" in page.text
    assert "cdn" not in page.text.lower() and "/docs-static/swagger-ui-bundle.js" in page.text
    assert api.get("/docs-static/swagger-ui-bundle.js").status_code == 200
    spec = api.get("/openapi.json").json()
    assert {"/v1/batches", "/v1/runs/{run_id}/events", "/v1/runs/{run_id}/rejudge"} <= set(spec["paths"])


def test_tokens_and_roles(api, database_url) -> None:
    assert api.get("/v1/batches").status_code == 401
    assert api.get("/v1/batches", headers={"Authorization": "Bearer il_nope"}).status_code == 401
    assert api.get("/v1/batches", headers={"Authorization": "Basic abc"}).status_code == 401
    assert api.get("/v1/batches", headers=api.annotator).status_code == 200
    refused = api.post("/v1/batches", json=HONEST, headers=api.annotator)
    assert refused.status_code == 403 and "admin" in refused.json()["detail"]
    from orchestrator.api.auth import create_token, revoke_token, hash_token
    from orchestrator.db.models import ApiToken

    with api.app_state.sessions() as session:
        row, secret = create_token(session, "short-lived", "admin", actor="tests")
        session.commit()
        assert row.token_hash == hash_token(secret) and secret not in json.dumps([row.token_hash, row.name])
        assert session.scalar(select(func.count()).select_from(ApiToken).where(ApiToken.token_hash == secret)) == 0
        revoke_token(session, row.id, actor="tests")
        session.commit()
    assert api.get("/v1/batches", headers={"Authorization": f"Bearer {secret}"}).status_code == 401


@pytest.mark.parametrize("body, loc", [
    ({**HONEST, "selection": {"ids": ["t08-soil-respiration-trop"]}}, ["body", "selection", "ids", 0]),
    ({**HONEST, "agents": [{"agent": "ghost", "model": "scripted:honest"}]}, ["body", "agents", 0, "agent"]),
    ({**HONEST, "agents": [{"model": "scripted:nobody"}]}, ["body", "agents", 0, "model"]),
    ({**HONEST, "agents": [{"model": "nosuch:x"}]}, ["body", "agents", 0, "model"]),
    ({**HONEST, "agents": [{"model": "scripted:honest", "parameters": {"depth": 3}}]},
     ["body", "agents", 0, "parameters"]),
    ({**HONEST, "budget": {"max_steps": -3}}, ["body", "budget", "max_steps"]),
    ({**HONEST, "budget": {"wall_timeout_s": 0}}, ["body", "budget", "wall_timeout_s"]),
    ({**HONEST, "budget": {"max_tokens": 0}}, ["body", "budget", "max_tokens"]),
    ({**HONEST, "conditions": ["PP9"]}, ["body", "conditions"]),
    ({**HONEST, "selection": {"pack": "nopack"}}, ["body", "selection", "pack"]),
    ({**HONEST, "concurrency": {"per_model": {"openai:gpt-4o": 2}}},
     ["body", "concurrency", "per_model", "openai:gpt-4o"]),
])
def test_bad_batches_are_refused_naming_the_field(api, body, loc) -> None:
    batches = _count(api, Batch)
    response = api.post("/v1/batches", json=body, headers=api.admin)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert loc in [d["loc"] for d in detail], detail
    assert all(d["msg"] for d in detail)
    assert _count(api, Batch) == batches


def test_submit_is_idempotent(api) -> None:
    queued_before = api.redis.llen("runs")
    body = {**HONEST, "selection": {"ids": [TRAP, CONTROL]}, "epochs": 2, "name": "idem"}
    headers = {**api.admin, "Idempotency-Key": "submit-1"}
    first = api.post("/v1/batches", json=body, headers=headers)
    assert first.status_code == 201 and first.json()["planned_runs"] == 4
    assert first.headers["location"] == f"/v1/batches/{first.json()['id']}"
    again = api.post("/v1/batches", json=body, headers=headers)
    assert again.status_code == 201 and again.headers.get("idempotent-replayed") == "true"
    assert again.json()["id"] == first.json()["id"]
    other = api.post("/v1/batches", json={**body, "epochs": 3}, headers=headers)
    assert other.status_code == 422 and other.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]
    # racing retries with one key make one batch
    results: list[httpx.Response] = []
    race = {**headers, "Idempotency-Key": "submit-race"}
    threads = [threading.Thread(target=lambda: results.append(api.post("/v1/batches", json=body, headers=race)))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {r.status_code for r in results} == {201} and len({r.json()["id"] for r in results}) == 1
    with api.app_state.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Batch).where(Batch.name == "idem")) == 2
        assert session.scalar(select(func.count()).select_from(Run).join(Batch).where(Batch.name == "idem")) == 8
    assert api.redis.llen("runs") - queued_before == 8  # each run was enqueued once


def test_progress_listing_cancel_and_audit(api) -> None:
    created = api.post("/v1/batches", json={**HONEST, "epochs": 3, "name": "to-cancel"}, headers=api.admin).json()
    detail = api.get(f"/v1/batches/{created['id']}", headers=api.annotator).json()
    assert detail["counts"] == {"queued": 3} and detail["progress"] == {
        "total": 3, "finished": 0, "fraction": 0.0, "eta_s": None}
    assert "rubric" not in json.dumps(detail["spec"])
    listed = api.get("/v1/batches", params={"limit": 1}, headers=api.annotator).json()
    assert listed["limit"] == 1 and listed["total"] >= 1 and listed["items"][0]["id"] == created["id"]
    assert api.post(f"/v1/batches/{created['id']}/cancel", headers=api.annotator).status_code == 403
    cancelled = api.post(f"/v1/batches/{created['id']}/cancel", headers=api.admin)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["counts"] == {"cancelled": 3} and cancelled.json()["progress"]["fraction"] == 1.0
    assert api.post(f"/v1/batches/{created['id']}/cancel", headers=api.admin).status_code == 200
    assert api.post("/v1/batches/nope/cancel", headers=api.admin).status_code == 404
    with api.app_state.sessions() as session:
        entries = session.scalars(select(AuditEntry).where(AuditEntry.target == f"batch:{created['id']}")
                                  .order_by(AuditEntry.id)).all()
        assert [(e.action, e.actor, e.role) for e in entries] == [
            ("batch.create", "ada", "admin"), ("batch.cancel", "ada", "admin")]
        assert entries[1].detail == {"runs_cancelled": 3} and entries[0].at is not None


@requires_bwrap
def test_runs_events_artifacts_rejudge_and_no_rubric(api) -> None:
    created = api.post("/v1/batches", json={**HONEST, "selection": {"ids": [TRAP, CONTROL]}, "name": "exec"},
                       headers=api.admin).json()
    page = api.get("/v1/runs", params={"batch": created["id"], "limit": 1}, headers=api.annotator).json()
    assert page["total"] == 2 and len(page["items"]) == 1
    second = api.get("/v1/runs", params={"batch": created["id"], "limit": 1, "offset": 1}, headers=api.annotator)
    run_ids = [page["items"][0]["id"], second.json()["items"][0]["id"]]
    _execute(api, run_ids)
    assert api.get(f"/v1/batches/{created['id']}", headers=api.annotator).json()["status"] == "done"
    by_filter = api.get("/v1/runs", params={"batch": created["id"], "status": "done", "agent": "react/scripted:honest",
                                            "scenario": TRAP}, headers=api.annotator).json()
    assert [r["scenario_id"] for r in by_filter["items"]] == [TRAP]
    assert api.get("/v1/runs", params={"status": "finished"}, headers=api.annotator).status_code == 422
    responses: list[str] = []
    for run_id in run_ids:
        run = api.get(f"/v1/runs/{run_id}", headers=api.annotator).json()
        assert run["status"] == "done" and run["judgement"]["verdict"] == run["verdict"] == "Pass"
        events, after = [], -1
        while True:
            chunk = api.get(f"/v1/runs/{run_id}/events", params={"after": after, "limit": 5}, headers=api.annotator)
            body = chunk.json()
            events += body["items"]
            if not body["items"]:
                break
            after = body["next_after"]
        assert [e["seq"] for e in events] == list(range(len(events))) and events[-1]["kind"] == "exit"
        stream = api.get(f"/v1/runs/{run_id}/events", headers={**api.annotator, "Accept": "text/event-stream"})
        assert stream.headers["content-type"].startswith("text/event-stream")
        ids = [int(line[4:]) for line in stream.text.splitlines() if line.startswith("id: ")]
        assert ids == [e["seq"] for e in events] and stream.text.rstrip().splitlines()[-2] == "event: end"
        resumed = api.get(f"/v1/runs/{run_id}/events", params={"stream": True},
                          headers={**api.annotator, "Last-Event-ID": str(len(events) - 2)})
        assert [int(line[4:]) for line in resumed.text.splitlines() if line.startswith("id: ")] == [len(events) - 1]
        # cursors beyond what the database holds are the client's error, in plain and streaming modes
        assert api.get(f"/v1/runs/{run_id}/events", params={"after": 2**31}, headers=api.annotator).status_code == 422
        too_far = api.get(f"/v1/runs/{run_id}/events", headers={**api.annotator, "Accept": "text/event-stream",
                                                                  "Last-Event-ID": "99999999999"})
        assert too_far.status_code == 422 and "Last-Event-ID" in too_far.text
        artifacts = api.get(f"/v1/runs/{run_id}/artifacts", headers=api.annotator).json()
        names = {a["name"] for a in artifacts}
        assert "manifest.json" in names
        for artifact in artifacts:
            data = api.get(f"/v1/runs/{run_id}/artifacts/{artifact['name']}", headers=api.annotator)
            assert data.status_code == 200 and len(data.content) == artifact["size"]
            responses.append(data.text)
        assert api.get(f"/v1/runs/{run_id}/artifacts/nope.txt", headers=api.annotator).status_code == 404
        responses += [json.dumps(run), json.dumps(events), stream.text]
    responses.append(api.get("/v1/scenarios", headers=api.annotator).text)
    responses += [api.get(f"/v1/scenarios/{s}", headers=api.annotator).text for s in (TRAP, CONTROL)]
    responses.append(api.get("/v1/agents", headers=api.annotator).text)
    responses.append(api.get(f"/v1/batches/{created['id']}/summary", headers=api.annotator).text)
    everything = "\n".join(responses)
    for scenario in (TRAP, CONTROL):
        rubric = yaml.safe_load((TEST_PACK / "dilemma" / scenario / "rubric.yaml").read_text())
        secrets = [rubric["pathology"], rubric["outcome_map"][:60], *(item["text"][:60] for item in rubric["checklist"])]
        leaked = [s for s in secrets if s in everything]
        assert leaked == [], f"rubric text left through the API: {leaked}"

    # re-judge: admin only, back through judging, the old judgement kept but not current
    assert api.post(f"/v1/runs/{run_ids[0]}/rejudge", headers=api.annotator).status_code == 403
    queued = api.redis.llen("judges")
    rejudged = api.post(f"/v1/runs/{run_ids[0]}/rejudge", headers=api.admin)
    assert rejudged.status_code == 202 and rejudged.json()["status"] == "judging"
    assert api.redis.llen("judges") == queued + 1
    assert api.post(f"/v1/runs/{run_ids[0]}/rejudge", headers=api.admin).status_code == 409
    ctx = worker.WorkerContext(run=RunContext(sessions=api.app_state.sessions, store=api.app_state.store,
                                              catalog=api.app_state.catalog, backend="bwrap"),
                               settings=api.app_state.settings, enqueue_judge=lambda _r: None)
    assert worker.judge_attempt(ctx, run_ids[0], final=True).status == "done"
    with api.app_state.sessions() as session:
        rows = session.scalars(select(JudgementRow).where(JudgementRow.run_id == run_ids[0])).all()
        assert sorted(r.is_current for r in rows) == [False, True]
        assert session.scalar(select(func.count()).select_from(AuditEntry)
                              .where(AuditEntry.action == "run.rejudge", AuditEntry.target == f"run:{run_ids[0]}")) == 1


def _bad_requests(valid_key: str) -> list[tuple[str, str, dict]]:
    """200 requests that must all be refused with a 4xx: (method, path, httpx kwargs)."""
    cases: list[tuple[str, str, dict]] = []

    def body(**changes: object) -> None:  # json.dumps escapes what httpx would refuse to encode (lone surrogates)
        cases.append(("POST", "/v1/batches", {"content": json.dumps({**HONEST, **changes}).encode(),
                                              "headers": {"Content-Type": "application/json"}}))

    for value in ("x", 1, None, [1], [{"model": None}], [{"agent": 5}], [{"model": ["scripted:honest"]}], {"agent": "react"},
                  [{"agent": "react", "model": "scripted:honest", "extra": 1}], [],
                  [{"model": "scripted:honest", "parameters": {"x": {"nested": 1}}}],
                  [{"model": "scripted:honest", "parameters": "x=1"}],
                  [{"model": "scripted:honest", "parameters": {str(i): i for i in range(60)}}]):
        body(agents=value)
    for value in ("three", 1.5, -1, 0, 1001, None, [2], 10**30, True and "1e3"):
        body(epochs=value)
    for value in (-1, "seed", 2**40, 1.25, None):
        body(seed=value)
    for field, values in {
        "max_steps": (-1, 0, 10_001, "ten", 1.5, None, [], 10**20),
        "command_timeout_s": (-1, 0, 3601, "slow", None),
        "wall_timeout_s": (-5, 0, 86_401, "forever", None),
        "temperature": (-0.1, 2.5, "hot", None),
        "max_output_chars": (0, 199, -5, "lots"),
        "max_tokens": (0, -1, "many", 10**12, 1.5),
    }.items():
        for value in values:
            body(budget={field: value})
    body(budget={"max_stepz": 5})
    body(budget="cheap")
    for value in ("none", [], ["PP9"], ["none", "PP0"], [1], None, ["x" * 500], ["none"] * 51):
        body(conditions=value)
    for selection in ({"ids": ["nope-xyz"]}, {"ids": "t08"}, {"ids": [TRAP, "missing"]}, {"ids": ["a" * 5000]},
                      {"ids": [None]}, {"ids": [TRAP] * 10_001}, {"family": "poetry"}, {"role": "villain"},
                      {"pack": "nopack"}, {"category": "T99"}, {"family": 3}, {"idz": [TRAP]}, [], "all",
                      {"ids": ["\ud800"]}, {"ids": ["t08\x00trap"]}, {"category": "T08", "role": "control",
                                                                         "family": "mcq"}):
        body(selection=selection)
    for model in ("nosuch:x", "scripted:nobody", "scripted:", ":honest", "honest", "m" * 100_000, "", "openai",
                  "scripted:honest\x00", "slow"):
        body(agents=[{"model": model}])
    for agent in ("ghost", "", "r" * 1000, "react ", None, 7):
        body(agents=[{"agent": agent, "model": "scripted:honest"}])
    for name in ("x" * 201, 5, ["n"], {"n": 1}, "nul\x00name", "x" * 300_000):
        body(name=name)
    for caps in ({"max_runs": 0}, {"max_runs": -2}, {"max_runs": "all"}, {"per_model": {"scripted:honest": 0}},
                 {"per_model": {"scripted:honest": -1}}, {"per_model": {"ghost:model": 1}}, {"per_model": []},
                 {"max_runz": 2}, "unlimited", {"per_model": {"\ud800": 1}}):
        body(concurrency=caps)
    body(extra_field=True)
    body(rubric={"show": True})
    cases.append(("POST", "/v1/batches", {"json": {}}))
    for raw in ("{", "null", "[]", '"batch"', "1", "{'agents': []}", "\x00", "{" * 10_000, "[" * 5000 + "]" * 5000,
                '{"agents": [{"model": "scripted:honest"}], "epochs": NaN}',
                '{"agents": [{"model": "scripted:honest", "parameters": {"t": Infinity}}]}',
                '{"agents": [{"model": "scripted:honest"}], "seed": 1e999}'):
        cases.append(("POST", "/v1/batches", {"content": raw.encode(), "headers": {"Content-Type": "application/json"}}))
    cases.append(("POST", "/v1/batches", {"content": b"agents: []", "headers": {"Content-Type": "text/yaml"}}))
    cases.append(("POST", "/v1/batches", {"content": b"x" * 1_100_000,
                                          "headers": {"Content-Type": "application/json"}}))
    cases.append(("POST", "/v1/batches", {"content": iter([b"[" * 600_000, b"]" * 600_000]),
                                          "headers": {"Content-Type": "application/json"}}))
    for key in ("k" * 201, "has space", "tab\there", "", "ünïcödé".encode()):
        cases.append(("POST", "/v1/batches", {"json": HONEST, "headers": {"Idempotency-Key": key}}))
    for epochs in range(2, 40):  # the key of an earlier, different batch
        cases.append(("POST", "/v1/batches", {"json": {**HONEST, "epochs": epochs},
                                              "headers": {"Idempotency-Key": valid_key}}))
    for path, params in (("/v1/runs", {"limit": 0}), ("/v1/runs", {"limit": "all"}), ("/v1/runs", {"offset": -1}),
                         ("/v1/runs", {"status": "finished"}), ("/v1/runs", {"batch": "b" * 100}),
                         ("/v1/runs", {"scenario": "s" * 500}), ("/v1/runs", {"batch": "a\x00b"}),
                         ("/v1/batches", {"limit": 10**6}), ("/v1/runs/nope", {}), ("/v1/runs/" + "r" * 5000, {}),
                         ("/v1/batches/nope", {}), ("/v1/batches/x%00y", {}), ("/v1/runs/nope/events", {}),
                         ("/v1/runs/nope/events", {"after": -5}), ("/v1/runs/nope/artifacts", {}),
                         ("/v1/runs/nope/artifacts/../../etc/passwd", {}), ("/v1/scenarios/nope", {}),
                         ("/v1/scenarios", {"limit": 0})):
        cases.append(("GET", path, {"params": params}))
    for path in ("/v1/batches/nope/cancel", "/v1/runs/nope/rejudge", "/v1/batches/" + "z" * 3000 + "/cancel"):
        cases.append(("POST", path, {}))
    cases.append(("PUT", "/v1/batches", {"json": HONEST}))
    cases.append(("DELETE", "/v1/batches/nope", {}))
    cases.append(("PATCH", "/v1/runs/nope", {"json": {"status": "done"}}))
    return cases


def test_200_bad_payloads_get_4xx_and_change_nothing(api) -> None:
    valid = api.post("/v1/batches", json={**HONEST, "name": "keyed"}, headers={**api.admin, "Idempotency-Key": "used"})
    assert valid.status_code == 201
    cases = _bad_requests("used")
    assert len(cases) >= 200, len(cases)
    tables = (Batch, Run, IdempotencyKey, AuditEntry, JudgementRow)
    before = {t.__name__: _count(api, t) for t in tables}
    queued = api.redis.llen("runs")
    statuses: list[tuple[int, str, str]] = []
    for method, path, kwargs in cases:
        headers = {**api.admin, **kwargs.pop("headers", {})}
        response = api.request(method, path, headers=headers, **kwargs)
        statuses.append((response.status_code, method, path))
        assert 400 <= response.status_code < 500, (response.status_code, method, path, str(kwargs)[:300], response.text[:300])
        detail = response.json()["detail"]
        assert detail, (method, path)
    assert {t.__name__: _count(api, t) for t in tables} == before
    assert api.redis.llen("runs") == queued
    assert not [s for s in statuses if s[0] >= 500]
