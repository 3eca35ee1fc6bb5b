"""The model gateway: an OpenAI-compatible HTTP front for a run's :class:`ModelProvider`.

Agents inside a sandbox talk plain OpenAI Chat Completions to this app with a
per-run bearer token; ``resolve(token)`` picks the provider behind that token,
so the agent never holds upstream credentials and every call goes through one
place the orchestrator controls.

Every failure is an OpenAI-style JSON error (never a 500 with a stack trace):
400 for bodies that break the wire format (naming the field), 401 for unknown
tokens, 413 for oversized bodies, 502 when the provider raises
:class:`ModelError`. The ``x-should-retry`` header tells OpenAI SDKs whether a
retry can help, so a non-retryable upstream failure is not retried blindly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from agents.gateway.chat_wire import (
    WireError,
    chat_completion_chunks,
    chat_completion_dict,
    error_body,
    loads_json_body,
    new_completion_id,
    parse_chat_request,
    sse_lines,
)
from agents.models.base import ModelError, ModelProvider

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


def create_gateway_app(resolve: Resolver, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
    """Build the gateway for ``resolve`` (bearer token → provider, or None for an unknown token)."""
    app = FastAPI(title="integritylab model gateway", docs_url=None, redoc_url=None, openapi_url=None)

    def authenticate(request: Request) -> ModelProvider | JSONResponse:
        token = _bearer_token(request)
        if token is None:
            return _unauthorized("missing bearer token: send 'Authorization: Bearer <run token>'")
        try:
            provider = resolve(token)
        except Exception:  # a resolver bug must not leak a trace or look like a bad token
            log.exception("gateway token resolver failed")
            return _error(500, "gateway error: token resolver failed", type="server_error")
        if provider is None:
            return _unauthorized("invalid API key: this token is not known to the gateway")
        return provider

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
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

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Any:
        provider = authenticate(request)
        if isinstance(provider, JSONResponse):
            return provider
        try:
            raw = await _read_body(request, max_body_bytes)
        except _BodyTooLarge:
            return _error(413, f"request body exceeds the gateway limit of {max_body_bytes} bytes",
                          type="invalid_request_error", code="request_too_large")
        try:
            call = parse_chat_request(loads_json_body(raw))
        except WireError as exc:
            return _error(400, str(exc), type="invalid_request_error", param=exc.param)

        try:
            # providers are synchronous and may block on upstream HTTP: keep them off the event loop
            reply = await run_in_threadpool(provider.complete, call.request)
        except ModelError as exc:
            return _error(502, f"{exc.layer} error: {exc}", type="upstream_error", code=f"{exc.layer}_error",
                          retry=exc.retryable)
        except Exception as exc:
            log.exception("provider %r crashed", provider.spec)
            return _error(502, f"gateway error: provider crashed: {type(exc).__name__}: {exc}",
                          type="upstream_error", code="gateway_error")

        model = reply.model or call.model or provider.spec or DEFAULT_MODEL_ID
        completion_id = new_completion_id()
        try:
            if not call.stream:
                return JSONResponse(chat_completion_dict(reply, model=model, completion_id=completion_id))
            frames = sse_lines(chat_completion_chunks(
                reply, model=model, include_usage=call.include_usage, completion_id=completion_id))
        except Exception as exc:  # e.g. arguments that cannot be JSON-encoded
            log.exception("could not render reply of %r", provider.spec)
            return _error(502, f"gateway error: could not encode the provider reply: {type(exc).__name__}: {exc}",
                          type="upstream_error", code="gateway_error")
        return StreamingResponse(
            iter(frames), media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    return app
