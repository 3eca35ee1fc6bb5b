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
* enforcing the run's :class:`~agents.gateway.budget.GatewayBudget` (calls,
  input/output tokens, cost, wall time; see :mod:`agents.gateway.budget`): once a
  budget is exhausted, further calls get a 429 naming the budget, its limit and
  what was used (e.g. "output-token budget of 2000 exhausted (2043 used)") in the
  route's own error shape, with ``x-should-retry: false`` so SDKs do not retry,
  recorded as an ``error`` event with layer ``gateway`` and error type
  ``budget_exhausted``. :attr:`RunGateway.usage` has the running totals.

The app itself is not modified: recording and the budget are an ASGI
middleware around it plus a wrapper around the provider (the wrapper sees the
normalized request/reply, the middleware the wire bytes and the route). The
``model_call`` event is written before the last byte of the reply goes out, so
it precedes anything the agent records after the call.

A run without a sandbox (the single-shot agent) need not pay for a server of
its own: ``RunGateway(..., host=shared_gateway_host())`` registers the run with
its process's :class:`GatewayHost`, one server on a private (0600) socket that
dispatches each request by token to the run's own middleware, recording and
budgets (see :class:`GatewayHost`).

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

import atexit
import contextvars
import hashlib
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

import httpx
import uvicorn

from agents.gateway.app import DEFAULT_MAX_BODY_BYTES, create_gateway_app
from agents.gateway.budget import (
    BudgetMeter,
    GatewayBudget,
    GatewayUsage,
    ModelPrice,
    Refusal,
    model_prices_from_env,
    price_for,
)
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
    """Passes calls to ``inner``, notes request and reply on the current exchange and meters the usage."""

    def __init__(self, inner: ModelProvider, meter: BudgetMeter) -> None:
        self.inner = inner
        self.meter = meter
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
        self.meter.add(reply.usage)  # before the reply is sent, so the client's next call sees the totals
        if exchange is not None:
            exchange.reply = reply
        return reply


def _json_or_text(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return raw.decode("utf-8", errors="replace")


class _UnixServer:
    """uvicorn serving an ASGI app on a Unix socket in a fresh ``mkdtemp`` directory (random name)."""

    def __init__(self, asgi: Any, temp_root: Path | None, *, dir_mode: int, socket_mode: int, log_level: str,
                 startup_timeout: float) -> None:
        self._dir: Path | None = Path(tempfile.mkdtemp(
            prefix="il-gw-", dir=str(temp_root) if temp_root is not None else None))
        self._runner: ServerThread | None = None
        try:
            os.chmod(self._dir, dir_mode)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(str(self.socket_path))
                os.chmod(self.socket_path, socket_mode)
            except OSError:
                sock.close()
                raise
            config = uvicorn.Config(asgi, interface="asgi3", log_level=log_level, lifespan="off",
                                    access_log=False, proxy_headers=False, timeout_graceful_shutdown=2)
            runner = ServerThread(config, sock, f"gateway on {self.socket_path}")
            runner.start(startup_timeout)
            self._runner = runner
        except BaseException:
            self.stop()
            raise

    @property
    def socket_path(self) -> Path:
        if self._dir is None:
            raise RuntimeError("gateway is not started")
        return self._dir / SOCKET_NAME

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and remove the directory; safe to call twice."""
        if self._runner is not None:
            self._runner.stop(timeout)
            self._runner = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def _offered_tokens(headers: dict[bytes, bytes]) -> list[str]:
    """The tokens a request offers: ``x-api-key`` (Anthropic style) and a bearer token."""
    candidates = [headers.get(b"x-api-key", b"").decode("latin-1").strip()]
    scheme, _, value = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    if scheme.lower() == "bearer":
        candidates.append(value.strip())
    return [c for c in candidates if c]


class RunGateway:
    """The model gateway of one run, on a private Unix socket. Use as a context manager."""

    def __init__(self, provider: ModelProvider, sink: EventSink, token: str | None = None,
                 budget_calls: int | None = None, *, budget: GatewayBudget | None = None,
                 price: ModelPrice | None = None, prices: dict[str, ModelPrice] | None = None,
                 max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, temp_root: str | Path | None = None,
                 startup_timeout: float = 10.0, log_level: str = "warning", host: GatewayHost | None = None) -> None:
        """``budget_calls`` is shorthand for ``budget=GatewayBudget(calls=...)``. The model's price is
        ``price``, else looked up by ``provider.spec`` in ``prices`` (default: ``INTEGRITYLAB_MODEL_PRICES``);
        a cost budget without a known price is refused here (ValueError) rather than never enforced.

        With ``host`` the run is served by that :class:`GatewayHost`'s server and socket (its body limit
        applies) instead of a server of its own; everything else — token, recording, budgets — is the same.
        """
        if budget_calls is not None:
            if budget is not None and budget.calls is not None:
                raise ValueError("give the call budget once: budget_calls or budget.calls")
            budget = GatewayBudget.model_validate({**(budget.model_dump() if budget else {}), "calls": budget_calls})
        self.budget = budget or GatewayBudget()
        if price is None:
            price = price_for(provider.spec, model_prices_from_env() if prices is None else prices)
        self.price = price
        self.provider = provider
        self.sink = sink
        self.token = token or f"il-run-{secrets.token_urlsafe(32)}"
        self.startup_timeout = startup_timeout
        self.log_level = log_level
        self.temp_root = Path(temp_root) if temp_root is not None else None
        self._meter = BudgetMeter(self.budget, price)
        self._recording = _RecordingProvider(provider, self._meter)
        self.max_body_bytes = max_body_bytes
        self._host = host
        self._app: Any = None  # the gateway app while started: our own, or the host's
        self._lock = threading.Lock()  # sink writes
        self._server: _UnixServer | None = None

    # ---- public ------------------------------------------------------------------

    @property
    def budget_calls(self) -> int | None:
        return self.budget.calls

    @property
    def calls(self) -> int:
        """Exchanges that reached (or are reaching) the provider."""
        return self._meter.calls

    @property
    def refused(self) -> int:
        """Calls refused because a budget was exhausted."""
        return self._meter.refused

    @property
    def usage(self) -> GatewayUsage:
        """The running totals (calls, tokens, cost, refused, wall time), e.g. for the run outcome."""
        return self._meter.usage()

    @property
    def socket_path(self) -> Path:
        if self._app is None:
            raise RuntimeError("gateway is not started")
        return self._host.socket_path if self._host is not None else self._server.socket_path  # type: ignore[union-attr]

    def start(self) -> Self:
        if self._app is not None:
            raise RuntimeError("gateway already started")
        if self._host is not None:
            self._host.register(self)
            self._app = self._host.app
        else:
            app = create_gateway_app(self._resolve, max_body_bytes=self.max_body_bytes)
            # the directory is traversable (bwrap as uid 65534 must resolve it) but not listable; connect()
            # needs write permission on the socket, and the sandbox uid varies by backend
            self._server = _UnixServer(self._asgi, self.temp_root, dir_mode=0o711, socket_mode=0o666,
                                       log_level=self.log_level, startup_timeout=self.startup_timeout)
            self._app = app
        self._meter.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and remove the socket directory (or leave the shared host); safe to call twice."""
        if self._host is not None:
            self._host.unregister(self)
        if self._server is not None:
            self._server.stop(timeout)
            self._server = None
        self._app = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ---- internals ----------------------------------------------------------------

    def _resolve(self, token: str) -> ModelProvider | None:
        if hmac.compare_digest(token.encode(), self.token.encode()):
            return self._recording
        return None

    def _authorized(self, headers: dict[bytes, bytes]) -> bool:
        return any(self._resolve(c) is not None for c in _offered_tokens(headers))

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
        refusal = self._meter.admit()
        if refusal is not None:
            await self._refuse(api, refusal, send)
            return
        await self._record(scope, receive, send, api)

    async def _refuse(self, api: str, refusal: Refusal, send: Any) -> None:
        message = refusal.message
        if api == "anthropic-messages":
            body: dict[str, Any] = {"type": "error", "error": {"type": "rate_limit_error", "message": message}}
        else:
            body = {"error": {"message": message, "type": "insufficient_quota", "param": None,
                              "code": refusal.code}}
        self._emit(EventKind.error, ErrorPayload(layer=Layer.gateway, error_type="budget_exhausted",
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

        finished = False

        def finish() -> None:
            """Settle the budget slot and record the exchange, once."""
            nonlocal finished
            if finished:
                return
            finished = True
            if exchange.request is None:
                # refused before the provider (bad body, oversized): give the budget slot back
                self._meter.release()
            self._emit(EventKind.model_call, self._payload(api, exchange, bytes(request_body), bytes(response_body),
                                                           truncated, status, time.monotonic() - started))

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
                if not message.get("more_body", False):
                    # recorded before the client sees the end of the reply: the event precedes whatever
                    # the agent records next, and the next call sees this one's budget slot settled
                    finish()
            await send(message)

        try:
            await self._app(scope, receive_and_keep, send_and_keep)
        finally:
            _current.reset(token)
            finish()

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
            request={"api": api, "body": wire_request,
                     **({"served": self.provider.settings} if self.provider.settings else {})},
            response=response,
            input_tokens=reply.usage.input_tokens if reply is not None else 0,
            output_tokens=reply.usage.output_tokens if reply is not None else 0,
            latency_s=round(latency, 6),
        )


def _token_key(token: str) -> bytes:
    """What the host files a run under: a digest, so finding a run by token leaks nothing through timing."""
    return hashlib.sha256(token.encode()).digest()


class GatewayHost:
    """One gateway server on a private Unix socket, serving many runs of this process told apart by token.

    For agents that run no sandbox (the single-shot agent): starting a uvicorn
    server per run costs ~160 ms (mostly waiting for it to stop), while a run
    registered here costs nothing to start. Each run keeps its own
    :class:`RunGateway` — token, sink, budgets, recording — and only the server,
    the socket and the FastAPI app are shared. The directory is 0700 and the
    socket 0600: only this process's user can connect, and nothing is mounted
    into a sandbox (sandboxed runs get a socket of their own). Requests with a
    token no run holds get the app's 401.
    """

    def __init__(self, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, temp_root: str | Path | None = None,
                 startup_timeout: float = 10.0, log_level: str = "warning") -> None:
        self.temp_root = Path(temp_root) if temp_root is not None else None
        self.startup_timeout = startup_timeout
        self.log_level = log_level
        self.app = create_gateway_app(self._resolve, max_body_bytes=max_body_bytes)
        self._runs: dict[bytes, RunGateway] = {}
        self._lock = threading.Lock()
        self._server: _UnixServer | None = None
        self._client: httpx.Client | None = None

    @property
    def socket_path(self) -> Path:
        if self._server is None:
            raise RuntimeError("gateway host is not started")
        return self._server.socket_path

    def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError("gateway host already started")
        self._server = _UnixServer(self._asgi, self.temp_root, dir_mode=0o700, socket_mode=0o600,
                                   log_level=self.log_level, startup_timeout=self.startup_timeout)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and remove the socket directory; safe to call twice."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._server is not None:
            self._server.stop(timeout)
            self._server = None

    def http_client(self) -> httpx.Client:
        """An HTTP client over the host's socket, shared by the runs (connections are kept alive).

        Plain HTTP on a Unix socket: no TLS, so no certificate store to load (which costs ~70 ms a client).
        """
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(transport=httpx.HTTPTransport(uds=str(self.socket_path), verify=False),
                                            base_url="http://gateway")
            return self._client

    def register(self, run: RunGateway) -> None:
        key = _token_key(run.token)
        with self._lock:
            if key in self._runs:
                raise ValueError("another run on this gateway host already holds this token")
            self._runs[key] = run

    def unregister(self, run: RunGateway) -> None:
        with self._lock:
            if self._runs.get(_token_key(run.token)) is run:
                del self._runs[_token_key(run.token)]

    def __len__(self) -> int:
        return len(self._runs)

    def _run_for(self, token: str) -> RunGateway | None:
        return self._runs.get(_token_key(token))

    def _resolve(self, token: str) -> ModelProvider | None:
        run = self._run_for(token)
        return run._recording if run is not None else None

    async def _asgi(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = {k.lower(): v for k, v in scope.get("headers", [])} if scope.get("type") == "http" else {}
        for token in _offered_tokens(headers):
            run = self._run_for(token)
            if run is not None:
                await run._asgi(scope, receive, send)
                return
        await self.app(scope, receive, send)  # no run's token: the app answers (401, or a lifespan/other scope)


_shared_lock = threading.Lock()
_shared: tuple[int, GatewayHost] | None = None


def shared_gateway_host() -> GatewayHost:
    """This process's :class:`GatewayHost`, started on first use (and anew in a forked child, e.g. a
    Celery prefork worker: the parent's server thread does not exist there). Stopped at exit."""
    global _shared
    with _shared_lock:
        pid = os.getpid()
        if _shared is None or _shared[0] != pid:
            host = GatewayHost().start()
            _shared = (pid, host)
            atexit.register(_stop_shared, pid, host)
        return _shared[1]


def _stop_shared(pid: int, host: GatewayHost) -> None:
    if os.getpid() == pid:  # a forked child must not remove its parent's socket
        host.stop(timeout=1.0)


def _after_fork_in_child() -> None:
    global _shared_lock
    _shared_lock = threading.Lock()  # a fork while another thread held it must not deadlock the child


os.register_at_fork(after_in_child=_after_fork_in_child)


__all__ = ["API_ROUTES", "SANDBOX_GATEWAY_SOCKET", "GatewayBudget", "GatewayHost", "GatewayUsage", "ModelPrice",
           "RunGateway", "shared_gateway_host"]
