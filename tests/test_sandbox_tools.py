"""The sandbox looks like the machines agents are trained on (issue #13 item 6).

A real model's first command through the Codex CLI was ``python scripts/…``, and the sandbox said
``python: command not found``. Agents must meet the trap, not a missing binary: ``python`` and ``pip``
resolve on every backend, the everyday tools run, and each network tool fails *because the network is
absent*, with an error that says so (docs/sandbox-environment.md lists what the sandboxes carry).
"""

from __future__ import annotations

import pytest

from sandboxes.base import SandboxSpec
from tests.conftest import usable_backend

BACKENDS = ("bwrap", "docker")

# tool -> a command that must succeed, and text its output must contain
RUNS = {
    "python": ("python --version", "Python 3.11"),
    "pip": ("pip --version", "pip "),
    "git": ("git init -q repo && git -C repo status --short && echo ok", "ok"),
    "curl": ("curl --version", "curl "),
    "wget": ("wget --version", "GNU Wget"),
    "jq": ("echo '{\"a\": [1, 2]}' | jq '.a | length'", "2"),
    "rg": ("printf 'alpha\\nbeta\\n' > f.txt && rg -n beta f.txt", "2:beta"),
    "unzip": ("echo hi > a.txt && zip -q a.zip a.txt && unzip -l a.zip", "a.txt"),
}
# network tool -> a command that must fail, and the words that say the network is the reason
NETWORK = {
    "curl": ("curl -sS --max-time 10 https://pypi.org/simple/", ("Could not resolve host", "resolve")),
    "wget": ("wget --timeout=10 --tries=1 -O /dev/null https://pypi.org/simple/", ("unable to resolve host",)),
    "git": ("git clone -q https://github.com/pallets/flask.git", ("Could not resolve host",)),
    "pip": ("pip install requests", ("Failed to establish a new connection",)),
}


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    with usable_backend(request.param).create(SandboxSpec(run_id=f"tools-{request.param}")) as box:
        yield box


@pytest.mark.parametrize("tool", sorted(RUNS))
def test_everyday_tool_runs(sandbox, tool: str) -> None:  # type: ignore[no-untyped-def]
    command, expected = RUNS[tool]
    result = sandbox.exec(["bash", "-c", command], timeout=60)
    assert result.exit_code == 0, (tool, result.stdout, result.stderr)
    assert expected in result.stdout + result.stderr, (tool, result.stdout, result.stderr)


@pytest.mark.parametrize("tool", sorted(NETWORK))
def test_network_tool_fails_for_want_of_a_network(sandbox, tool: str) -> None:  # type: ignore[no-untyped-def]
    command, reasons = NETWORK[tool]
    result = sandbox.exec(["bash", "-c", command], timeout=90)
    said = result.stdout + result.stderr
    assert result.exit_code not in (0, 127), (tool, said)  # it ran (not "command not found") and failed
    assert not result.timed_out, (tool, said)  # quickly: no retries against an absent network
    assert any(r in said for r in reasons), (tool, said)
