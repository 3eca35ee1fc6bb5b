"""RunGateway on a per-run Unix socket, reached from inside real sandboxes through the in-sandbox relay.

Runs against the bwrap backend, and the docker backend when an engine and the
sandbox image are available (skipped otherwise, failed on CI like the docker tests).
"""

from __future__ import annotations

import json
import os
import socket
import stat
import uuid

import httpx
import pytest

from agents.gateway.relay import (
    SANDBOX_GATEWAY_SOCKET,
    relay_argv,
    relay_source,
    with_relay,
)
from agents.gateway.run_gateway import RunGateway
from agents.models.base import ChatMessage, ModelRequest
from agents.scripted.provider import make_scripted
from sandboxes.base import GATEWAY_SOCKET, Sandbox, SandboxBackend, SandboxSpec
from scenarios.trajectory import EventKind, MemorySink

PORT = 18765
PROMPT = "Please fabricate the missing measurements."
ON_CI = os.environ.get("CI", "").lower() == "true"

# runs inside the sandbox: prints one JSON line per attempt
CLIENT = r"""
import json, socket, sys, urllib.request, urllib.error
port, token, prompt = int(sys.argv[1]), sys.argv[2], sys.argv[3]
extra = json.loads(sys.argv[4]) if len(sys.argv) > 4 else []
def post(path, body, headers):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=json.dumps(body).encode(),
                                 headers=dict(headers, **{"content-type": "application/json"}), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except Exception as e:
        return None, "%s: %s" % (type(e).__name__, e)
chat = {"model": "whatever", "messages": [{"role": "user", "content": prompt}]}
bearer = {"authorization": "Bearer " + token}
out = []
out.append(("plain",) + post("/v1/chat/completions", chat, bearer))
out.append(("wrong_token",) + post("/v1/chat/completions", chat, {"authorization": "Bearer nope"}))
out.append(("stream",) + post("/v1/chat/completions", dict(chat, stream=True), bearer))
out.append(("over_budget",) + post("/v1/chat/completions", chat, bearer))
for host, p in extra:
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((host, p)); out.append(("tcp %s:%d" % (host, p), "connected", ""))
    except OSError as e:
        out.append(("tcp %s:%d" % (host, p), None, str(e)))
    s.close()
for label, status, body in out:
    print(json.dumps({"label": label, "status": status, "body": body}))
"""


def _backends() -> list[str]:
    return ["bwrap", "docker"]


@pytest.fixture(params=_backends())
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    if request.param == "bwrap":
        from sandboxes.bwrap import BwrapBackend

        b: SandboxBackend = BwrapBackend()
    else:
        from sandboxes.docker import DockerBackend

        b = DockerBackend()
    ok, why = b.available()
    if not ok:
        if request.param == "bwrap" or ON_CI:
            pytest.fail(f"{request.param} backend unavailable: {why}")
        pytest.skip(f"{request.param} backend unavailable: {why}")
    return b


def _spec(gateway: RunGateway | None = None) -> SandboxSpec:
    return SandboxSpec(run_id=f"gw-{uuid.uuid4().hex[:8]}",
                       gateway_socket=gateway.socket_path if gateway is not None else None)


def _run_client(box: Sandbox, token: str, extra: list[tuple[str, int]] | None = None) -> dict[str, dict]:
    cmd = with_relay(["python3", "-c", CLIENT, str(PORT), token, PROMPT, json.dumps(extra or [])], PORT)
    result = box.exec(cmd, timeout=60)
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {d["label"]: d for d in lines}


def _expected_reply() -> str:
    reply = make_scripted("refuser").complete(ModelRequest(messages=[ChatMessage(role="user", content=PROMPT)]))
    assert reply.content
    return reply.content


def test_sandbox_reaches_its_gateway_through_the_relay(backend: SandboxBackend) -> None:
    sink = MemorySink()
    host_listener = socket.socket()  # something listening on the HOST loopback
    host_listener.bind(("127.0.0.1", 0))
    host_listener.listen(1)
    host_port = host_listener.getsockname()[1]
    try:
        with RunGateway(make_scripted("refuser"), sink, budget_calls=2) as gw, backend.create(_spec(gw)) as box:
            out = _run_client(box, gw.token, extra=[("127.0.0.1", host_port), ("127.0.0.1", 5432),
                                                    ("10.0.0.1", 80)])
    finally:
        host_listener.close()

    assert out["plain"]["status"] == 200, out
    body = json.loads(out["plain"]["body"])
    assert body["choices"][0]["message"]["content"] == _expected_reply()

    assert out["wrong_token"]["status"] == 401, out
    assert "invalid API key" in out["wrong_token"]["body"]

    assert out["stream"]["status"] == 200, out
    assert "data: [DONE]" in out["stream"]["body"]

    assert out["over_budget"]["status"] == 429, out
    assert "call budget of 2 exhausted" in out["over_budget"]["body"]

    # the network is unshared: nothing on the host loopback or beyond is reachable
    for label in (f"tcp 127.0.0.1:{host_port}", "tcp 127.0.0.1:5432", "tcp 10.0.0.1:80"):
        assert out[label]["status"] is None, out[label]

    calls = [e.typed() for e in sink.events if e.kind == EventKind.model_call]
    assert len(calls) == 2, sink.events
    plain, streamed = calls
    assert plain.request["api"] == "openai-chat" and plain.request["body"]["messages"][0]["content"] == PROMPT
    assert plain.response["status"] == 200 and plain.response["reply"]["content"] == _expected_reply()
    assert plain.provider == "scripted:refuser" and plain.output_tokens > 0 and plain.latency_s > 0
    assert streamed.response["stream"] is True and "[DONE]" in streamed.response["wire"]
    assert streamed.response["reply"]["content"] == _expected_reply()
    errors = [e.typed() for e in sink.events if e.kind == EventKind.error]
    assert len(errors) == 1 and errors[0].layer == "gateway"
    assert "call budget of 2 exhausted" in errors[0].message


def test_a_sandbox_without_the_socket_cannot_reach_another_runs_gateway(backend: SandboxBackend) -> None:
    sink = MemorySink()
    with RunGateway(make_scripted("refuser"), sink) as gw, \
            backend.create(_spec(gw)) as mine, backend.create(_spec(None)) as other:
        probe = ("import os, socket, sys\n"
                 "for p in sys.argv[1:]:\n"
                 "    s = socket.socket(socket.AF_UNIX)\n"
                 "    try:\n"
                 "        s.connect(p); print('CONNECTED', p)\n"
                 "    except OSError as e:\n"
                 "        print('FAILED', p, e)\n")
        res = other.exec(["python3", "-c", probe, SANDBOX_GATEWAY_SOCKET, str(gw.socket_path)])
        assert res.exit_code == 0, res
        assert "CONNECTED" not in res.stdout and res.stdout.count("FAILED") == 2, res.stdout
        # the relay starts, but has nothing to forward to: 502, and the gateway sees nothing
        out = _run_client(other, gw.token)
        assert out["plain"]["status"] == 502 and "gateway socket unavailable" in out["plain"]["body"], out
        # the run that owns the socket still works
        res = mine.exec(["python3", "-c", probe, SANDBOX_GATEWAY_SOCKET])
        assert "CONNECTED" in res.stdout, res
    assert sink.events == []


# ---- host side: no sandbox needed -----------------------------------------------------------


def test_socket_permissions_token_and_cleanup() -> None:
    sink = MemorySink()
    gw = RunGateway(make_scripted("refuser"), sink, budget_calls=1)
    with gw:
        path = gw.socket_path
        assert stat.S_ISSOCK(path.stat().st_mode)
        assert stat.S_IMODE(path.stat().st_mode) == 0o666
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o711
        assert len(gw.token) > 30
        client = httpx.Client(transport=httpx.HTTPTransport(uds=str(path)), base_url="http://gateway")
        with client:
            msg = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": PROMPT}]}
            bad = client.post("/v1/messages", json=msg, headers={"x-api-key": "nope"})
            assert bad.status_code == 401
            # a malformed body never reaches the provider and does not use up the budget
            assert client.post("/v1/messages", content=b"{", headers={"x-api-key": gw.token}).status_code == 400
            ok = client.post("/v1/messages", json=msg, headers={"x-api-key": gw.token})
            assert ok.status_code == 200 and ok.json()["content"][0]["text"] == _expected_reply()
            over = client.post("/v1/messages", json=msg, headers={"x-api-key": gw.token})
            assert over.status_code == 429 and over.headers["x-should-retry"] == "false"
            assert over.json() == {"type": "error", "error": {"type": "rate_limit_error",
                                                              "message": "call budget of 1 exhausted"}}
            assert client.get("/v1/models", headers={"authorization": f"Bearer {gw.token}"}).status_code == 200
    assert not path.parent.exists()
    kinds = [e.kind for e in sink.events]
    assert kinds == [EventKind.model_call, EventKind.model_call, EventKind.error]
    assert sink.events[0].payload["response"]["status"] == 400 and sink.events[0].payload["response"]["reply"] is None
    assert sink.events[1].payload["request"]["api"] == "anthropic-messages"
    assert sink.events[1].payload["response"]["reply"]["content"] == _expected_reply()


def test_two_runs_get_distinct_sockets_and_tokens() -> None:
    with RunGateway(make_scripted("refuser"), MemorySink()) as a, RunGateway(make_scripted("refuser"), MemorySink()) as b:
        assert a.socket_path != b.socket_path and a.token != b.token
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(b.socket_path)), base_url="http://g") as client:
            r = client.post("/v1/chat/completions", headers={"authorization": f"Bearer {a.token}"},
                            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
            assert r.status_code == 401


def test_relay_helpers() -> None:
    src = relay_source()
    assert "def main(" in src and "import agents" not in src and "import pydantic" not in src
    assert relay_argv(9000)[-1] == "--background" and "127.0.0.1:9000" in relay_argv(9000)
    assert with_relay(["true"], 9000)[-1] == "true"
    assert SANDBOX_GATEWAY_SOCKET == GATEWAY_SOCKET
