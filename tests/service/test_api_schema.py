"""The API against its own OpenAPI document, with schemathesis: generated requests to every operation
(bounded in examples and time) over real PostgreSQL and a private Redis, and the real ids of a finished
run, batch and artifact. No answer may be a 5xx, and every status, content type, body and header must be
one the document declares.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.checks import not_a_server_error

from orchestrator import worker
from orchestrator.api import create_app
from orchestrator.batches import BatchSpec, add_batch, selected_scenarios
from orchestrator.execution import RunContext
from tests.conftest import requires_bwrap
from tests.service.conftest import TRAP, admin_token, requires_postgres, requires_redis, service_settings

pytestmark = [requires_postgres, requires_redis, requires_bwrap]
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance]
EXAMPLES_PER_OPERATION = 25


class Served:
    """The app under test, an admin token, and the ids of one finished run (with its batch and artifacts)."""

    def __init__(self, app: FastAPI, token: str, run_id: str, batch_id: str, artifact: str) -> None:
        self.app, self.run_id, self.batch_id, self.artifact = app, run_id, batch_id, artifact
        self.headers = {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def served(database_url: str, redis_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Served:
    settings_ = service_settings(database_url, redis_server.url, tmp_path_factory.mktemp("schema-data"))
    app = create_app(settings_)
    state = app.state.service
    spec = BatchSpec.model_validate({"selection": {"ids": [TRAP]},
                                     "agents": [{"agent": "react", "model": "scripted:honest"}]})
    with state.sessions() as session:
        batch, run_ids = add_batch(session, selected_scenarios(state.catalog, spec), spec, created_by="schema")
        session.commit()
        batch_id = batch.id
    ctx = worker.WorkerContext(
        run=RunContext(sessions=state.sessions, store=state.store, catalog=state.catalog, backend="bwrap"),
        settings=state.settings, enqueue_judge=lambda _run_id: None)
    assert worker.attempt_run(ctx, run_ids[0]).status == "judging"
    assert worker.judge_attempt(ctx, run_ids[0], final=True).status in ("done", "error")
    from orchestrator.db.models import ArtifactRow
    from sqlalchemy import select

    with state.sessions() as session:
        artifact = session.scalars(select(ArtifactRow.name).where(ArtifactRow.run_id == run_ids[0])).first()
    assert artifact, "the honest run collected no file"
    return Served(app, admin_token(database_url, "admin", "fuzzer"), run_ids[0], batch_id, artifact)


@pytest.fixture(scope="module")
def api_schema(served: Served) -> Any:
    return schemathesis.openapi.from_asgi("/openapi.json", served.app)


def _fuzz(operation: Any, headers: dict[str, str]) -> None:
    """Generated requests to one operation (schemathesis' ``from_fixture`` does not run under pytest 9)."""

    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def check(case: Any) -> None:
        case.call_and_validate(headers=headers, checks=CHECKS)

    check()


def test_generated_requests_get_declared_answers(served: Served, api_schema: Any) -> None:
    failures: dict[str, str] = {}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 15
    for operation in operations:
        try:
            _fuzz(operation, served.headers)
        except Exception as exc:  # noqa: BLE001 - every operation is tried; all failures are reported together
            failures[f"{operation.method.upper()} {operation.path}"] = str(exc)[:3000]
    assert not failures, "\n\n".join(f"{name}:\n{why}" for name, why in failures.items())


def test_real_resources_get_declared_answers(served: Served, api_schema: Any) -> None:
    """The same checks on requests that find something: the run, its events (page and stream), its files."""
    real = {"run_id": served.run_id, "batch_id": served.batch_id, "name": served.artifact, "scenario_id": TRAP}
    answered = []
    for result in api_schema.get_all_operations():
        operation = result.ok()
        if operation.method.upper() != "GET":
            continue
        names = {p.name for p in operation.path_parameters}
        case = operation.Case(path_parameters={n: real[n] for n in names})
        response = case.call_and_validate(headers=served.headers, checks=CHECKS)
        answered.append((operation.path, response.status_code))
    streamed = operation_case(api_schema, "/v1/runs/{run_id}/events", served.run_id,
                              headers={**served.headers, "Accept": "text/event-stream"})
    assert streamed.status_code == 200 and streamed.headers["content-type"][0].startswith("text/event-stream")
    # the served batch ran one condition: it is no ablation, and its ablation is refused as such (422)
    expected = {"/v1/ablations/{batch_id}": 422}
    assert all(code == expected.get(path, 200) for path, code in answered), answered
    assert {"/v1/runs/{run_id}/artifacts/{name}", "/v1/batches/{batch_id}/summary"} <= {p for p, _ in answered}


def operation_case(api_schema: Any, path: str, run_id: str, headers: dict[str, str]) -> Any:
    operation = api_schema[path]["GET"]
    return operation.Case(path_parameters={"run_id": run_id}).call_and_validate(headers=headers, checks=CHECKS)
