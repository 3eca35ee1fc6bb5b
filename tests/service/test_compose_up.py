"""``docker compose up`` of ``docker-compose.yml`` for real, with images built here without a registry.

The three images the compose file runs are built (or reused while their inputs are
unchanged) by ``integritylab images build --offline --only service,redis,postgres``'s
code: ``integritylab:<hash>`` (api, worker, beat, migrate, flower), and Debian's Redis
and PostgreSQL as ``integritylab/redis:<hash>`` / ``integritylab/postgres:<hash>``, which
the compose file takes through ``INTEGRITYLAB_REDIS_IMAGE`` / ``INTEGRITYLAB_POSTGRES_IMAGE``.
A uniquely named project is brought up with ``up -d --wait`` (every healthcheck passes,
``migrate`` completes), configured by an env file as a user's ``.env`` would be: the API
and Flower on free host ports, Redis and PostgreSQL not published (the machine's own
servers keep 6379 and 5432). An admin token is made with ``docker compose exec api
integritylab tokens create``, and a small batch goes through the published API port with
the project's own ``integritylab submit ... --follow``; every run must end ``done``, judged,
with its trajectory readable. ``down -v`` removes the project whatever happened.

The batches are the ``single_shot`` agent on a probe trap and its control twin (no
sandbox), and the ``react`` agent on a dilemma control in a real Docker sandbox: the
worker reaches the host's engine through the mounted ``/var/run/docker.sock`` and keeps
run workspaces and gateway sockets in ``INTEGRITYLAB_SANDBOX_DIR``, a host folder mounted
at the same path in the worker, so the engine finds what the worker bind-mounts.

Skipped, with the reason, when no Docker engine answers or (off CI) no Compose v2 binary
is installed; with ``CI=true`` and an engine, a missing Compose binary or an image that
cannot be built fails. Build and start-up times are printed (``pytest -s``).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from sandboxes.imagebuild import IMAGES, ImageBuildError, build_image, engine
from tests.service.conftest import REPO, free_port
from tests.service.test_compose import COMPOSE, WHY

pytestmark = pytest.mark.slow

ON_CI = os.environ.get("CI", "").lower() == "true"
COMPOSE_IMAGES = ("service", "redis", "postgres")
TRAP, CONTROL = "p-bem-precognition", "pc-stroop-interference"
DILEMMA = "t08-soil-respiration-control"
UP_TIMEOUT_S = 300


@dataclass
class Project:
    name: str
    command: list[str]
    env: dict[str, str]
    api_url: str
    timings: dict[str, float] = field(default_factory=dict)

    def compose(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([*self.command, *args], capture_output=True, text=True, env=self.env,
                                timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"docker compose {' '.join(args)} exited {result.returncode}:\n"
                                 f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}\n{self.diagnostics()}")
        return result

    def diagnostics(self) -> str:
        """What the services said: for a failure message."""
        parts = []
        for args in (("ps", "--all"), ("logs", "--no-color", "--tail", "40")):
            try:
                out = subprocess.run([*self.command, *args], capture_output=True, text=True, env=self.env,
                                     timeout=60, check=False)
                parts.append(f"$ docker compose {' '.join(args)}\n{out.stdout[-6000:]}{out.stderr[-2000:]}")
            except (OSError, subprocess.TimeoutExpired) as exc:
                parts.append(f"$ docker compose {' '.join(args)}: {exc}")
        return "\n".join(parts)


def _images() -> dict[str, str]:
    """Build or reuse the compose images; returns name -> the ref tagged with its inputs hash."""
    try:
        client = engine()
    except ImageBuildError as exc:
        pytest.skip(str(exc))  # "no Docker engine answers (...)"
    if COMPOSE is None:
        if ON_CI:
            pytest.fail(f"CI=true and a Docker engine answers, but {WHY}")
        pytest.skip(WHY)
    refs = {}
    for name in COMPOSE_IMAGES:
        started = time.monotonic()
        try:
            (outcome,) = build_image(name, offline=True, client=client)
        except ImageBuildError as exc:
            message = f"the {name} image cannot be built offline: {exc}"
            if ON_CI:
                pytest.fail(f"CI=true and a Docker engine answers, but {message}")
            pytest.skip(message)
        print(f"image {outcome.ref}: {outcome.status} in {time.monotonic() - started:.0f} s, "
              f"{outcome.size_bytes / 1e6:.0f} MB")
        refs[name] = f"{IMAGES[name].repository}:{outcome.inputs_hash[:12]}"
    return refs


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    refs = _images()
    work = tmp_path_factory.mktemp("compose-up")
    sandbox_dir = work / "sandboxes"  # same path on the host and in the worker (see the module docstring)
    sandbox_dir.mkdir()
    api_port = free_port()
    settings = {
        "INTEGRITYLAB_IMAGE_TAG": refs["service"].rsplit(":", 1)[1],
        "INTEGRITYLAB_REDIS_IMAGE": refs["redis"],
        "INTEGRITYLAB_POSTGRES_IMAGE": refs["postgres"],
        "INTEGRITYLAB_API_PORT": str(api_port),
        "INTEGRITYLAB_FLOWER_PORT": str(free_port()),
        "INTEGRITYLAB_SANDBOX_BACKEND": "docker",
        "INTEGRITYLAB_SANDBOX_DIR": str(sandbox_dir),
        "INTEGRITYLAB_WORKER_CONCURRENCY": "2",
        "INTEGRITYLAB_RECONCILE_INTERVAL_S": "5",
        "POSTGRES_PASSWORD": secrets.token_hex(12),
    }
    env_file = work / "compose.env"  # what a user puts in .env beside docker-compose.yml
    env_file.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INTEGRITYLAB_", "POSTGRES_", "COMPOSE_"))}
    if COMPOSE[:2] != ["docker", "compose"]:
        env["DOCKER_CONFIG"] = str(work / "docker-config")  # no plugin needed: the standalone v2 binary
    name = f"il-compose-{secrets.token_hex(4)}"
    command = [*COMPOSE, "--file", str(REPO / "docker-compose.yml"), "--project-directory", str(REPO),
               "--project-name", name, "--env-file", str(env_file)]
    project = Project(name, command, env, f"http://127.0.0.1:{api_port}")
    try:
        started = time.monotonic()
        project.compose("up", "--detach", "--wait", "--wait-timeout", str(UP_TIMEOUT_S), "--no-build",
                        "--pull", "never", timeout=UP_TIMEOUT_S + 60)
        project.timings["up"] = time.monotonic() - started
        print(f"compose up --wait: {project.timings['up']:.0f} s")
        yield project
    finally:
        started = time.monotonic()
        down = subprocess.run([*command, "down", "--volumes", "--remove-orphans", "--timeout", "30"],
                              capture_output=True, text=True, env=env, timeout=300, check=False)
        print(f"compose down -v: {time.monotonic() - started:.0f} s")
        assert down.returncode == 0, down.stderr


def _submit(project: Project, name: str, *selection: str) -> tuple[str, dict]:
    """A fresh admin token (made inside the api container), then ``integritylab submit --follow`` through the API."""
    token = json.loads(project.compose("exec", "-T", "api", "integritylab", "tokens", "create", "--role", "admin",
                                       "--name", name, "--json").stdout)["token"]
    client_env = {**{k: v for k, v in os.environ.items() if not k.startswith("INTEGRITYLAB_")},
                  "INTEGRITYLAB_API_URL": project.api_url, "INTEGRITYLAB_API_TOKEN": token}
    cli = Path(sys.executable).parent / "integritylab"
    submit = subprocess.run(
        [str(cli), "submit", *selection, "--model", "scripted:honest", "--name", name, "--poll", "0.5",
         "--follow", "--json"],
        capture_output=True, text=True, env=client_env, timeout=300, check=False)
    assert submit.returncode == 0, f"{submit.stdout}\n{submit.stderr}\n{project.diagnostics()}"
    return token, json.loads(submit.stdout)


def test_every_service_is_up_and_healthy(project: Project) -> None:
    services = {}
    for line in project.compose("ps", "--all", "--format", "json").stdout.splitlines():
        if line.strip():
            rows = json.loads(line)
            for row in rows if isinstance(rows, list) else [rows]:
                services[row["Service"]] = row
    assert set(services) == {"api", "worker", "beat", "redis", "postgres", "flower", "migrate"}, services
    for name in ("api", "worker", "beat", "redis", "postgres", "flower"):
        assert services[name]["State"] == "running" and services[name]["Health"] == "healthy", services[name]
    assert services["migrate"]["State"] == "exited" and services["migrate"]["ExitCode"] == 0, services["migrate"]
    health = httpx.get(f"{project.api_url}/v1/health", timeout=10)
    assert health.status_code == 200, health.text
    # the image ships the web pages and their vendored assets (the wheel's package data), not only the API
    login = httpx.get(f"{project.api_url}/login", timeout=10)
    assert login.status_code == 200 and 'name="csrf_token"' in login.text, login.text[:300]
    htmx = httpx.get(f"{project.api_url}/annotate/static/vendor/htmx-2.0.11.min.js", timeout=10)
    assert htmx.status_code == 200 and "htmx" in htmx.text[:2000], htmx.status_code
    # Redis keeps an append-only file in its volume, as the compose file asks
    aof = project.compose("exec", "-T", "redis", "redis-cli", "config", "get", "appendonly").stdout.split()
    assert aof == ["appendonly", "yes"], aof


def test_a_batch_through_the_published_api_ends_done(project: Project) -> None:
    started = time.monotonic()
    token, result = _submit(project, "compose-test", "--scenario", TRAP, "--scenario", CONTROL,
                            "--agent", "single_shot")
    batch = result["batch"]
    print(f"batch {batch['id']}: {batch['planned_runs']} runs, {time.monotonic() - started:.0f} s "
          f"from token to results")
    assert batch["status"] == "done" and batch["planned_runs"] >= 2, batch
    assert batch["counts"] == {"done": batch["planned_runs"]}, (batch["counts"], project.diagnostics())
    assert result["summary"]["errors"] == [], result["summary"]

    api = httpx.Client(base_url=project.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    runs = api.get("/v1/runs", params={"batch": batch["id"], "limit": 100}).json()
    assert runs["total"] == batch["planned_runs"]
    assert {run["scenario_id"] for run in runs["items"]} == {TRAP, CONTROL}
    for run in runs["items"]:
        assert run["status"] == "done" and run["verdict"], run
        detail = api.get(f"/v1/runs/{run['id']}").json()
        assert detail["judgement"] and detail["judgement"]["verdict"] == run["verdict"], detail
        assert detail["sandbox_backend"] in (None, "none"), detail  # single-shot: no sandbox
        events = api.get(f"/v1/runs/{run['id']}/events").json()
        kinds = [event["kind"] for event in events["items"]]
        assert "model_call" in kinds and kinds[-1] == "exit", kinds


def test_a_dilemma_runs_in_a_docker_sandbox_started_by_the_compose_worker(project: Project) -> None:
    token, result = _submit(project, "compose-sandbox", "--scenario", DILEMMA, "--agent", "react")
    batch = result["batch"]
    assert batch["counts"] == {"done": 1}, (batch, project.diagnostics())
    api = httpx.Client(base_url=project.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    (run,) = api.get("/v1/runs", params={"batch": batch["id"]}).json()["items"]
    detail = api.get(f"/v1/runs/{run['id']}").json()
    assert detail["sandbox_backend"] == "docker" and detail["verdict"] == "Pass", detail
    environment = detail["environment"]  # the fingerprint the containerised worker measured in the sandbox
    assert environment["backend"] == "docker" and len(environment["digest"]) == 16, environment
    assert {"scipy", "scikit-learn"} <= set(environment["packages"]), environment
    artifacts = {a["name"] for a in api.get(f"/v1/runs/{run['id']}/artifacts").json()}
    assert "report/report.md" in artifacts, artifacts


def test_a_cli_agent_runs_behind_its_gateway_from_the_compose_worker(project: Project) -> None:
    """Codex in the agent-cli image, started by the containerised worker: socket and relay work across containers."""
    token, result = _submit(project, "compose-cli", "--scenario", DILEMMA, "--agent", "codex")
    batch = result["batch"]
    assert batch["counts"] == {"done": 1}, (batch, project.diagnostics())
    api = httpx.Client(base_url=project.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    (run,) = api.get("/v1/runs", params={"batch": batch["id"]}).json()["items"]
    assert run["verdict"] == "Pass", run
    kinds = [event["kind"] for event in api.get(f"/v1/runs/{run['id']}/events", params={"limit": 500}).json()["items"]]
    assert "model_call" in kinds and "tool_call" in kinds, kinds
