"""One run's model gateway on a private Unix socket, recording every exchange.

``RunGateway`` serves :func:`create_gateway_app` for exactly one run:

* on a Unix domain socket (no TCP port at all) in a fresh per-run directory,
  meant to be bind-mounted into that run's sandbox at
  :data:`SANDBOX_GATEWAY_SOCKET`; the sandbox reaches it through
  :mod:`agents.gateway.relay` listening on its own loopback;
* behind a fresh random per-run token (anything else gets the app's 401);
* recording every exchange — plain or streamed, on any of the three APIs — as
  one ``model_call`` trajectory event through the run's sink (wire request,
  provider reply, HTTP status, usage, latency, API);
* enforcing a call budget: once ``budget_calls`` exchanges have reached the
  provider, further calls get a 429 "call budget of N exhausted" (with
  ``x-should-retry: false`` so SDKs do not retry), recorded as an ``error`` event
  with layer ``gateway``.

The app itself is not modified: recording and the budget are an ASGI
middleware around it plus a wrapper around the provider (the wrapper sees the
normalized request/reply, the middleware the wire bytes and the route).

Socket permissions. The directory is ``mkdtemp``'s random name, chmod 0711: the
owner (the orchestrator) may list it, nobody else can list it or create files
in it, but others may traverse it — needed because the bwrap backend, when the
orchestrator is root, runs bwrap as host uid 65534, and bwrap resolves the
bind-mount source path as that uid (a 0700 root-owned directory makes the bind
fail). The socket file itself is 0666, because ``connect`` needs write
permission on the socket inode and the connecting uid differs per backend
(host 65534 under bwrap-as-root, host uid 1000 under docker, the orchestrator's
own uid under non-root bwrap). Another host user who guessed the random path
could connect, but still needs the per-run token; sandboxes of other runs
never have the path mounted and have no network to reach anything else.
"""

from __future__ import annotations

import contextvars
import hmac
import json
import logging
import os
import secrets
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import uvicorn

from agents.gateway.app import DEFAULT_MAX_BODY_BYTES, create_gateway_app
from agents.gateway.server import ServerThread
from agents.models.base import ModelProvider, ModelRequest, ModelResponse
from scenarios.trajectory import (
    ErrorPayload,
    EventKind,
    EventSink,
    Layer,
    ModelCallPayload,
)

log = logging.getLogger(__name__)

#: where sandboxes see the run's gateway socket
SANDBOX_GATEWAY_SOCKET = "/run/integritylab/gateway.sock"
SOCKET_NAME = "gateway.sock"

#: routes that reach the provider, and the API each one speaks
API_ROUTES = {
    "/v1/chat/completions": "openai-chat",
    "/v1/responses": "openai-responses",
    "/v1/messages": "anthropic-messages",
}
#: cap on the wire response (e.g. an SSE stream) kept in a model_call event
RECORD_RESPONSE_CAP = 1024 * 1024


class _Exchange:
    """What the provider wrapper learned about the current HTTP exchange."""

    def __init__(self) -> None:
        self.request: ModelRequest | None = None
        self.reply: ModelResponse | None = None
        self.error: str | None = None


_current: contextvars.ContextVar[_Exchange | None] = contextvars.ContextVar("il_gateway_exchange", default=None)


class _RecordingProvider(ModelProvider):
    """Passes calls to ``inner`` and notes request and reply on the current exchange."""

    def __init__(self, inner: ModelProvider) -> None:
        self.inner = inner
        self.spec = inner.spec

    def complete(self, request: ModelRequest) -> ModelResponse:
        exchange = _current.get()
        if exchange is not None:
            exchange.request = request
        try:
            reply = self.inner.complete(request)
        except Exception as exc:
            if exchange is not None:
                exchange.error = f"{type(exc).__name__}: {exc}"
            raise
        if exchange is not None:
            exchange.reply = reply
        return reply


def _json_or_text(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return raw.decode("utf-8", errors="replace")


class RunGateway:
    """The model gateway of one run, on a private Unix socket. Use as a context manager."""

    def __init__(self, provider: ModelProvider, sink: EventSink, token: str | None = None,
                 budget_calls: int | None = None, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 temp_root: str | Path | None = None, startup_timeout: float = 10.0,
                 log_level: str = "warning") -> None:
        if budget_calls is not None and budget_calls < 0:
            raise ValueError("budget_calls must be >= 0")
        self.provider = provider
        self.sink = sink
        self.token = token or f"il-run-{secrets.token_urlsafe(32)}"
        self.budget_calls = budget_calls
        self.startup_timeout = startup_timeout
        self.log_level = log_level
        self.temp_root = Path(temp_root) if temp_root is not None else None
        self._recording = _RecordingProvider(provider)
        self._app = create_gateway_app(self._resolve, max_body_bytes=max_body_bytes)
        self._lock = threading.Lock()  # counters and sink writes
        self.calls = 0  # exchanges that reached (or are reaching) the provider
        self.refused = 0  # calls refused because the budget was exhausted
        self._dir: Path | None = None
        self._runner: ServerThread | None = None

    # ---- public ------------------------------------------------------------------

    @property
    def socket_path(self) -> Path:
        if self._dir is None:
            raise RuntimeError("gateway is not started")
        return self._dir / SOCKET_NAME

    def start(self) -> Self:
        if self._runner is not None:
            raise RuntimeError("gateway already started")
        root = str(self.temp_root) if self.temp_root is not None else None
        self._dir = Path(tempfile.mkdtemp(prefix="il-gw-", dir=root))  # 0700, random name
        os.chmod(self._dir, 0o711)  # traversable (bwrap as uid 65534 must resolve it), not listable
        path = self._dir / SOCKET_NAME
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
            os.chmod(path, 0o666)  # connect() needs write permission; the sandbox uid varies by backend
        except OSError:
            sock.close()
            self._cleanup_dir()
            raise
        config = uvicorn.Config(self._asgi, interface="asgi3", log_level=self.log_level, lifespan="off",
                                access_log=False, proxy_headers=False,
                                timeout_graceful_shutdown=2)
        runner = ServerThread(config, sock, f"gateway on {path}")
        try:
            runner.start(self.startup_timeout)
        except RuntimeError:
            self._cleanup_dir()
            raise
        self._runner = runner
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and remove the socket directory; safe to call twice."""
        if self._runner is not None:
            self._runner.stop(timeout)
        self._runner = None
        self._cleanup_dir()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ---- internals ----------------------------------------------------------------

    def _cleanup_dir(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    def _resolve(self, token: str) -> ModelProvider | None:
        if hmac.compare_digest(token.encode(), self.token.encode()):
            return self._recording
        return None

    def _authorized(self, headers: dict[bytes, bytes]) -> bool:
        candidates = [headers.get(b"x-api-key", b"").decode("latin-1").strip()]
        scheme, _, value = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        if scheme.lower() == "bearer":
            candidates.append(value.strip())
        return any(c and self._resolve(c) is not None for c in candidates)

    def _emit(self, kind: EventKind, payload: Any) -> None:
        try:
            with self._lock:
                self.sink.emit(kind, payload)
        except Exception:  # a broken sink must not turn into a 500 for the agent
            log.exception("gateway could not record a %s event", kind)

    async def _asgi(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope.get("type") == "http" else ""
        api = API_ROUTES.get(path.rstrip("/")) if scope.get("method") == "POST" else None
        if api is None:
            await self._app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        if not self._authorized(headers):  # the app answers 401; nothing reaches the provider
            await self._app(scope, receive, send)
            return
        with self._lock:
            over = self.budget_calls is not None and self.calls >= self.budget_calls
            if over:
                self.refused += 1
            else:
                self.calls += 1
        if over:
            await self._refuse(api, send)
            return
        await self._record(scope, receive, send, api)

    async def _refuse(self, api: str, send: Any) -> None:
        message = f"call budget of {self.budget_calls} exhausted"
        if api == "anthropic-messages":
            body: dict[str, Any] = {"type": "error", "error": {"type": "rate_limit_error", "message": message}}
        else:
            body = {"error": {"message": message, "type": "insufficient_quota", "param": None,
                              "code": "call_budget_exhausted"}}
        self._emit(EventKind.error, ErrorPayload(layer=Layer.gateway, error_type="call_budget_exhausted",
                                                 message=f"{message}; refused a {api} call"))
        raw = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": 429,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(raw)).encode()),
                                (b"x-should-retry", b"false")]})
        await send({"type": "http.response.body", "body": raw})

    async def _record(self, scope: dict[str, Any], receive: Any, send: Any, api: str) -> None:
        exchange = _Exchange()
        token = _current.set(exchange)
        request_body = bytearray()
        response_body = bytearray()
        truncated = False
        status = 0
        started = time.monotonic()

        async def receive_and_keep() -> Any:
            message = await receive()
            if message.get("type") == "http.request" and len(request_body) <= RECORD_RESPONSE_CAP:
                request_body.extend(message.get("body", b""))
            return message

        async def send_and_keep(message: dict[str, Any]) -> None:
            nonlocal status, truncated
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunk = message.get("body", b"")
                room = RECORD_RESPONSE_CAP - len(response_body)
                if len(chunk) > room:
                    truncated = True
                response_body.extend(chunk[:max(room, 0)])
            await send(message)

        try:
            await self._app(scope, receive_and_keep, send_and_keep)
        finally:
            _current.reset(token)
            latency = time.monotonic() - started
            if exchange.request is None:
                # refused before the provider (bad body, oversized): give the budget slot back
                with self._lock:
                    self.calls -= 1
            self._emit(EventKind.model_call, self._payload(api, exchange, bytes(request_body),
                                                           bytes(response_body), truncated, status, latency))

    def _payload(self, api: str, exchange: _Exchange, request_body: bytes, response_body: bytes,
                 truncated: bool, status: int, latency: float) -> ModelCallPayload:
        wire_request = _json_or_text(request_body)
        streamed = isinstance(wire_request, dict) and bool(wire_request.get("stream"))
        reply = exchange.reply
        response: dict[str, Any] = {
            "status": status,
            "stream": streamed,
            "reply": reply.model_dump(mode="json") if reply is not None else None,
            "wire": response_body.decode("utf-8", errors="replace") if streamed else _json_or_text(response_body),
            "wire_truncated": truncated,
        }
        if exchange.error is not None:
            response["error"] = exchange.error
        model = (reply.model if reply is not None else None) or (
            wire_request.get("model") if isinstance(wire_request, dict) else None) or ""
        return ModelCallPayload(
            provider=self.provider.spec or type(self.provider).__name__,
            model=str(model),
            request={"api": api, "body": wire_request},
            response=response,
            input_tokens=reply.usage.input_tokens if reply is not None else 0,
            output_tokens=reply.usage.output_tokens if reply is not None else 0,
            latency_s=round(latency, 6),
        )


__all__ = ["API_ROUTES", "SANDBOX_GATEWAY_SOCKET", "RunGateway"]
