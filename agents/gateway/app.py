"""The model gateway: OpenAI- and Anthropic-compatible HTTP fronts for a run's :class:`ModelProvider`.

Agents inside a sandbox talk OpenAI Chat Completions, the OpenAI Responses API
(Codex CLI) or the Anthropic Messages API (Claude Code) to this app with a
per-run token; ``resolve(token)`` picks the provider behind that token,
so the agent never holds upstream credentials and every call goes through one
place the orchestrator controls.

Every failure is a JSON error in the route's own API style — OpenAI's envelope,
or Anthropic's ``{"type": "error", "error": {...}}`` on ``/v1/messages`` —
never a 500 with a stack trace:
400 for bodies that break the wire format (naming the field), 401 for unknown
tokens, 413 for oversized bodies, 502 when the provider raises
:class:`ModelError`. The ``x-should-retry`` header tells OpenAI SDKs whether a
retry can help (OpenAI and Anthropic SDKs both honour it), so a non-retryable
upstream failure is not retried blindly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from agents.gateway.anthropic_wire import (
    MessagesCall,
    anthropic_error_body,
    message_dict,
    message_events,
    new_message_id,
    parse_messages_request,
)
from agents.gateway.chat_wire import (
    ChatCompletionCall,
    WireError,
    chat_completion_chunks,
    chat_completion_dict,
    error_body,
    loads_json_body,
    new_completion_id,
    parse_chat_request,
    sse_lines,
)
from agents.gateway.responses_wire import (
    ResponsesCall,
    named_sse_frames,
    new_response_id,
    parse_responses_request,
    response_dict,
    response_events,
)
from agents.models.base import ModelError, ModelProvider, ModelResponse

log = logging.getLogger(__name__)

Resolver = Callable[[str], ModelProvider | None]

#: default cap on request bodies; long agent transcripts fit, runaway ones do not
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_MODEL_ID = "integritylab"


class _BodyTooLarge(Exception):
    pass


def _error(status: int, message: str, *, type: str, code: str | None = None, param: str | None = None,
           retry: bool = False) -> JSONResponse:
    return JSONResponse(
        error_body(message, type=type, code=code, param=param),
        status_code=status,
        headers={"x-should-retry": "true" if retry else "false"},
    )


def _unauthorized(message: str) -> JSONResponse:
    return _error(401, message, type="invalid_request_error", code="invalid_api_key")


def _bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def _read_body(request: Request, limit: int) -> bytes:
    """Read at most ``limit`` bytes, refusing early on Content-Length so huge bodies are never buffered."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _BodyTooLarge
    buf = bytearray()
    async for piece in request.stream():
        buf.extend(piece)
        if len(buf) > limit:
            raise _BodyTooLarge
    return bytes(buf)


def _anthropic_error(status: int, message: str, *, type: str | None = None, retry: bool = False) -> JSONResponse:
    """Anthropic's error shape; the error type follows from the status unless given."""
    kind = type or _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
    return JSONResponse(anthropic_error_body(message, type=kind), status_code=status,
                        headers={"x-should-retry": "true" if retry else "false"})


_ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                          404: "not_found_error", 405: "invalid_request_error", 413: "request_too_large"}


class _Style:
    """How one wire API reports the gateway's failures (OpenAI's envelope or Anthropic's)."""

    def __init__(self, anthropic: bool) -> None:
        self.anthropic = anthropic

    def bad_request(self, message: str, param: str | None = None) -> JSONResponse:
        if self.anthropic:
            return _anthropic_error(400, message)
        return _error(400, message, type="invalid_request_error", param=param)

    def unauthorized(self, message: str) -> JSONResponse:
        return _anthropic_error(401, message) if self.anthropic else _unauthorized(message)

    def too_large(self, limit: int) -> JSONResponse:
        message = f"request body exceeds the gateway limit of {limit} bytes"
        if self.anthropic:
            return _anthropic_error(413, message)
        return _error(413, message, type="invalid_request_error", code="request_too_large")

    def resolver_failed(self) -> JSONResponse:
        message = "gateway error: token resolver failed"
        return _anthropic_error(500, message) if self.anthropic else _error(500, message, type="server_error")

    def upstream(self, message: str, *, code: str, retry: bool = False) -> JSONResponse:
        if self.anthropic:
            return _anthropic_error(502, message, retry=retry)
        return _error(502, message, type="upstream_error", code=code, retry=retry)


_OPENAI = _Style(anthropic=False)
_ANTHROPIC = _Style(anthropic=True)


def _stream(frames: list[str]) -> StreamingResponse:
    return StreamingResponse(iter(frames), media_type="text/event-stream",
                             headers={"cache-control": "no-cache", "x-accel-buffering": "no"})


def create_gateway_app(resolve: Resolver, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
    """Build the gateway for ``resolve`` (bearer token → provider, or None for an unknown token).

    Routes: ``GET /v1/models``, ``POST /v1/chat/completions`` and ``POST /v1/responses`` (OpenAI,
    bearer token) and ``POST /v1/messages`` (Anthropic, ``x-api-key`` or bearer token, errors in
    Anthropic's shape). All share one flow: authenticate, read and parse the body, call the provider
    off the event loop, render (or stream) the reply.
    """
    app = FastAPI(title="integritylab model gateway", docs_url=None, redoc_url=None, openapi_url=None)

    def authenticate(request: Request, style: _Style = _OPENAI) -> ModelProvider | JSONResponse:
        token = _bearer_token(request)
        if style.anthropic:
            token = (request.headers.get("x-api-key") or "").strip() or token
        if token is None:
            hint = "'x-api-key: <run token>' or " if style.anthropic else ""
            return style.unauthorized(f"missing bearer token: send {hint}'Authorization: Bearer <run token>'")
        try:
            provider = resolve(token)
        except Exception:  # a resolver bug must not leak a trace or look like a bad token
            log.exception("gateway token resolver failed")
            return style.resolver_failed()
        if provider is None:
            return style.unauthorized("invalid API key: this token is not known to the gateway")
        return provider

    async def handle(request: Request, style: _Style, parse: Callable[[Any], Any],
                     render: Callable[[Any, ModelResponse, str], Response]) -> Response:
        """The flow every completion route shares; ``parse`` raises WireError, ``render`` builds the reply."""
        provider = authenticate(request, style)
        if isinstance(provider, JSONResponse):
            return provider
        try:
            raw = await _read_body(request, max_body_bytes)
        except _BodyTooLarge:
            return style.too_large(max_body_bytes)
        try:
            call = parse(loads_json_body(raw))
        except WireError as exc:
            return style.bad_request(str(exc), exc.param)

        try:
            # providers are synchronous and may block on upstream HTTP: keep them off the event loop
            reply = await run_in_threadpool(provider.complete, call.request)
        except ModelError as exc:
            return style.upstream(f"{exc.layer} error: {exc}", code=f"{exc.layer}_error", retry=exc.retryable)
        except Exception as exc:
            log.exception("provider %r crashed", provider.spec)
            return style.upstream(f"gateway error: provider crashed: {type(exc).__name__}: {exc}",
                                  code="gateway_error")

        model = reply.model or call.model or provider.spec or DEFAULT_MODEL_ID
        try:
            return render(call, reply, model)
        except Exception as exc:  # e.g. arguments that cannot be JSON-encoded
            log.exception("could not render reply of %r", provider.spec)
            return style.upstream(
                f"gateway error: could not encode the provider reply: {type(exc).__name__}: {exc}",
                code="gateway_error")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if request.url.path.startswith("/v1/messages"):
            return _anthropic_error(exc.status_code, str(exc.detail))
        return _error(exc.status_code, str(exc.detail), type="invalid_request_error")

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(400, f"invalid request: {exc.errors()}", type="invalid_request_error")

    @app.get("/v1/models")
    async def list_models(request: Request) -> Any:
        provider = authenticate(request)
        if isinstance(provider, JSONResponse):
            return provider
        model_id = provider.spec or DEFAULT_MODEL_ID
        return {"object": "list", "data": [{"id": model_id, "object": "model", "created": 0,
                                            "owned_by": "integritylab"}]}

    def render_chat(call: ChatCompletionCall, reply: ModelResponse, model: str) -> Response:
        completion_id = new_completion_id()
        if not call.stream:
            return JSONResponse(chat_completion_dict(reply, model=model, completion_id=completion_id))
        return _stream(sse_lines(chat_completion_chunks(
            reply, model=model, include_usage=call.include_usage, completion_id=completion_id)))

    def render_responses(call: ResponsesCall, reply: ModelResponse, model: str) -> Response:
        response_id = new_response_id()
        if call.stream:
            out: Response = _stream(named_sse_frames(
                response_events(call, reply, model=model, response_id=response_id)))
        else:
            out = JSONResponse(response_dict(call, reply, model=model, response_id=response_id))
        if call.dropped_tools:  # say what the model was not offered, instead of dropping it silently
            out.headers["x-integritylab-dropped-tools"] = ",".join(call.dropped_tools)
        return out

    def render_messages(call: MessagesCall, reply: ModelResponse, model: str) -> Response:
        message_id = new_message_id()
        if call.stream:
            return _stream(named_sse_frames(message_events(reply, model=model, message_id=message_id)))
        return JSONResponse(message_dict(reply, model=model, message_id=message_id))

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Any:
        return await handle(request, _OPENAI, parse_chat_request, render_chat)

    @app.post("/v1/responses")
    async def responses(request: Request) -> Any:
        return await handle(request, _OPENAI, parse_responses_request, render_responses)

    @app.post("/v1/messages")
    async def messages(request: Request) -> Any:  # Claude Code adds ?beta=true; query strings are ignored
        return await handle(request, _ANTHROPIC, parse_messages_request, render_messages)

    return app
