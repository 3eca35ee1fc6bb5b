"""The FastAPI app factory: ``/v1`` routers, bearer auth, error shapes, a request-size limit, health.

Errors are always ``{"detail": ...}``: a string, or for 422 a list of
``{"loc": [...], "msg": ..., "type": ...}`` naming each bad field. Unexpected
failures answer 500 without internals (logged with a request id).
"""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path
from typing import Any

import redis
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from sqlalchemy import text
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orchestrator.api import ablations, agents, annotate, batches, dashboards, pages, queues, runs, scenarios
from orchestrator.api.responses import COMMON
from orchestrator.api.state import ServiceState
from orchestrator.artifacts import ArtifactStore
from orchestrator.db.session import session_factory
from orchestrator.settings import Settings, get_settings
from scenarios.loader import load_catalog

log = logging.getLogger(__name__)
API_VERSION = "1"


class RequestGuard:
    """Refuse bodies over ``limit`` bytes with 413 (with or without Content-Length), and NUL in URLs with 400."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if "\x00" in scope.get("path", "") or b"%00" in scope.get("query_string", b""):
            await _refuse(send, 400, "NUL characters are not allowed in URLs")
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _refuse(send, 413, f"request body larger than {self.limit} bytes")
            return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:  # FastAPI passes an HTTPException from the body reader through
                    raise HTTPException(413, detail=f"request body larger than {self.limit} bytes")
            return message

        await self.app(scope, limited_receive, send)


async def _refuse(send: Send, status_code: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    await send({"type": "http.response.start", "status": status_code,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class HealthOut(BaseModel):
    status: str = Field(description="ok, or degraded when a dependency is down")
    database: str
    broker: str


class SafeJSONResponse(JSONResponse):
    """JSON with non-ASCII escaped, so text a client sent (lone surrogates included) can always be echoed back."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def _validation_problems(exc: RequestValidationError) -> list[dict[str, Any]]:
    problems = []
    for error in exc.errors():
        loc = [part if isinstance(part, int) else str(part)[:200] for part in error.get("loc", [])]
        message = str(error.get("msg", "invalid"))[:500]
        problems.append({"loc": loc, "msg": message, "type": error.get("type", "invalid")})
    return problems


def _mount_docs(app: FastAPI) -> None:
    """OpenAPI at /docs with Swagger UI served from this process (no CDN: offline labs are normal users)."""
    static = None
    try:
        import swagger_ui

        candidate = Path(swagger_ui.__file__).parent / "static"
        static = candidate if (candidate / "swagger-ui-bundle.js").exists() else None
    except ImportError:
        pass
    assets: dict[str, str] = {}
    if static is not None:
        app.mount("/docs-static", StaticFiles(directory=static), name="docs-static")
        assets = {"swagger_js_url": "/docs-static/swagger-ui-bundle.js",
                  "swagger_css_url": "/docs-static/swagger-ui.css", "swagger_favicon_url": ""}

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="integritylab API", **assets)


def build_state(settings: Settings) -> ServiceState:
    from orchestrator import tasks

    if tasks.settings != settings:
        tasks.configure(settings)
    settings.import_plugins()
    return ServiceState(
        settings=settings,
        sessions=session_factory(settings.effective_database_url),
        catalog=load_catalog(settings.packs or None),
        store=ArtifactStore(settings.artifact_dir),
        enqueue_runs=tasks.enqueue_runs,
        enqueue_judges=tasks.enqueue_judges,
    )


def create_app(settings: Settings | None = None, state: ServiceState | None = None) -> FastAPI:
    """The API for ``settings`` (default: from the environment). ``integritylab serve`` runs it under uvicorn."""
    settings = settings or get_settings()
    state = state or build_state(settings)
    app = FastAPI(
        default_response_class=SafeJSONResponse,
        title="integritylab", version=API_VERSION, docs_url=None, redoc_url=None, openapi_url="/openapi.json",
        description="Submit batches of sandboxed agent runs on integrity traps, follow them, read their "
                    "trajectories, artifacts and verdicts. Authenticate with `Authorization: Bearer <token>` "
                    "(`integritylab tokens create --role admin|annotator`).",
    )
    app.state.service = state
    for module in (batches, ablations, runs, scenarios, agents, queues):
        app.include_router(module.router)
    app.include_router(pages.router)
    app.include_router(dashboards.router)
    app.include_router(annotate.router)
    app.mount("/annotate/static", annotate.static, name="annotate-static")
    _mount_docs(app)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return SafeJSONResponse({"detail": _validation_problems(exc)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return SafeJSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        request_id = uuid.uuid4().hex[:12]
        log.exception("request %s %s failed (id %s)", request.method, request.url.path, request_id, exc_info=exc)
        return SafeJSONResponse({"detail": f"internal error (request id {request_id})"}, status_code=500)

    @app.get("/v1/health", tags=["health"], response_model=HealthOut,
             responses={**COMMON, 503: {"model": HealthOut, "description": "the database or the broker is down"}})
    def health() -> JSONResponse:
        """Liveness of the database and the broker (no token needed); 503 if either is down."""
        checks: dict[str, str] = {}
        try:
            with state.sessions() as session:
                session.execute(text("select 1"))
            checks["database"] = "ok"
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            checks["database"] = f"down: {type(exc).__name__}"
        try:
            redis.Redis.from_url(settings.effective_redis_url, socket_timeout=2, socket_connect_timeout=2).ping()
            checks["broker"] = "ok"
        except Exception as exc:  # noqa: BLE001
            checks["broker"] = f"down: {type(exc).__name__}"
        healthy = all(v == "ok" for v in checks.values())
        return SafeJSONResponse({"status": "ok" if healthy else "degraded", **checks},
                                status_code=200 if healthy else 503)

    app.add_middleware(RequestGuard, limit=settings.max_body_bytes)
    return app
