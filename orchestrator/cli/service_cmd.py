"""The service processes and their clients: ``serve``, ``worker``, ``beat``, ``migrate``, ``submit``, ``tokens``.

``serve`` (the REST API under uvicorn), ``worker`` (a Celery worker) and
``beat`` (Celery beat, which sends the reconciler) read the same
``INTEGRITYLAB_*`` environment (README, "Service"). ``submit`` is a client of
the REST API only; ``tokens`` writes to the database directly (run it where the
database is reachable, e.g. ``docker compose exec api integritylab tokens create``).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
import yaml
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy import create_engine, select, text
from sqlalchemy.pool import NullPool

from orchestrator.cli.runs_cmd import LEGEND, err, out, summary_table
from orchestrator.cli.selection_opts import CategoryOpt, FamilyOpt, RoleOpt, categories, one_family, one_role
from orchestrator.metrics import AgentSummary
from orchestrator.settings import Settings

MIGRATION_LOCK = 72_416_001  # PostgreSQL advisory lock id: one migrating process at a time
FINISHED_BATCH = ("done", "cancelled")

tokens_app = typer.Typer(help="Create, list and revoke REST API tokens.", no_args_is_help=True)


def migrate_database(url: str) -> None:
    """Bring the database to the newest migration; on PostgreSQL, concurrent starters wait for each other."""
    from orchestrator.db.session import upgrade

    if not url.startswith("postgresql"):
        upgrade(url)
        return
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            connection.execute(text(f"SELECT pg_advisory_lock({MIGRATION_LOCK})"))
            try:
                upgrade(url)
            finally:
                connection.execute(text(f"SELECT pg_advisory_unlock({MIGRATION_LOCK})"))
    finally:
        engine.dispose()


def migrate() -> None:
    """Create or upgrade the database schema (run once before starting the API and workers)."""
    settings = Settings.from_env()
    migrate_database(settings.effective_database_url)
    err.print(f"database at the newest schema: {_redact(settings.effective_database_url)}")


def _redact(url: str) -> str:
    head, at, tail = url.rpartition("@")
    if not at:
        return url
    scheme, _, credentials = head.partition("://")
    return f"{scheme}://{credentials.split(':', 1)[0]}:***@{tail}"


def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8000,
    processes: Annotated[int, typer.Option("--processes", min=1, max=64, help="uvicorn worker processes")] = 1,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
) -> None:
    """Run the REST API (OpenAPI docs at /docs)."""
    import uvicorn

    settings = Settings.from_env()
    migrate_database(settings.effective_database_url)
    uvicorn.run("orchestrator.api:create_app", factory=True, host=host, port=port, workers=processes,
                log_level=log_level, timeout_graceful_shutdown=5)


def worker(
    queues: Annotated[str, typer.Option(help="comma-separated queues to consume")] = "runs,judges,maintenance",
    concurrency: Annotated[int, typer.Option(min=1, max=256, help="runs executed at once (processes)")] = 2,
    hostname: Annotated[str | None, typer.Option(help="Celery node name (default: worker-<pid>@<host>)")] = None,
    loglevel: Annotated[str, typer.Option(help="Celery log level")] = "info",
    events: Annotated[bool, typer.Option("--events", help="send task events (for Flower)")] = False,
) -> None:
    """Run a Celery worker: executes runs (queue runs), judges them (judges), reconciles (maintenance)."""
    settings = Settings.from_env()
    migrate_database(settings.effective_database_url)
    from orchestrator.tasks import app as celery_app

    argv = ["worker", "--queues", queues, "--concurrency", str(concurrency), "--loglevel", loglevel,
            "--hostname", hostname or f"worker-{os.getpid()}@{socket.gethostname()}",
            "--without-mingle", "--without-gossip"]
    if events:
        argv.append("--events")
    celery_app.worker_main(argv)


def beat(loglevel: Annotated[str, typer.Option(help="Celery log level")] = "info") -> None:
    """Run Celery beat: sends the reconciler to the maintenance queue every INTEGRITYLAB_RECONCILE_INTERVAL_S."""
    settings = Settings.from_env()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    from orchestrator.tasks import app as celery_app

    sys.exit(celery_app.start(["beat", "--loglevel", loglevel,
                               "--schedule", str(settings.data_dir / "celerybeat-schedule")]) or 0)


def healthcheck(
    service: Annotated[str, typer.Argument(help="api | worker | beat")],
    url: Annotated[str, typer.Option(help="the API's address (for 'api')")] = "http://127.0.0.1:8000",
    node: Annotated[str | None, typer.Option(help="the worker's node name (default worker@<host>)")] = None,
) -> None:
    """Exit 0 if the process is healthy: the API answers /v1/health, the worker answers a ping, the reconciler ran."""
    settings = Settings.from_env()
    if service == "api":
        try:
            healthy = httpx.get(f"{url.rstrip('/')}/v1/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            healthy = False
    elif service == "worker":
        from orchestrator.tasks import app as celery_app

        replies = celery_app.control.ping(destination=[node or f"worker@{socket.gethostname()}"], timeout=5)
        healthy = bool(replies)
        if healthy:  # a worker whose database is down answers pings but takes no work: not healthy
            import redis

            from orchestrator.dbguard import down_markers

            try:
                down = down_markers(redis.Redis.from_url(settings.effective_redis_url, socket_timeout=5))
            except redis.RedisError:
                down = {}
            if down:
                since = min(down.values())
                err.print(f"worker: the database is unavailable to {len(down)} process(es) "
                          f"for {time.time() - since:.0f} s; they take no work until it answers")
                healthy = False
    elif service == "beat":
        import redis

        from orchestrator.reconciler import LAST_RUN_KEY

        try:
            last = redis.Redis.from_url(settings.effective_redis_url, socket_timeout=5).get(LAST_RUN_KEY)
        except redis.RedisError:
            last = None
        healthy = last is not None and time.time() - float(last) < 3 * settings.reconcile_interval_s + 30
    else:
        err.print("[red]error:[/red] expected api, worker or beat")
        raise typer.Exit(2)
    raise typer.Exit(0 if healthy else 1)


# --------------------------------------------------------------------------- tokens


@tokens_app.command("create")
def tokens_create(
    role: Annotated[str, typer.Option(help="admin (submits, cancels, re-judges) or annotator (reads)")],
    name: Annotated[str, typer.Option(help="who holds it (shown in the audit log)")] = "",
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Create a token; the secret is printed once and only its hash is stored."""
    from orchestrator.api.auth import Role, create_token
    from orchestrator.db.session import session_factory

    if role not in {r.value for r in Role}:
        err.print(f"[red]error:[/red] --role must be one of {', '.join(r.value for r in Role)}")
        raise typer.Exit(2)
    settings = Settings.from_env()
    migrate_database(settings.effective_database_url)
    with session_factory(settings.effective_database_url)() as session:
        row, secret = create_token(session, name or role, role, actor=f"cli:{_user()}")
        session.commit()
        if as_json:
            print(json.dumps({"id": row.id, "name": row.name, "role": row.role, "token": secret}))
        else:
            err.print(f"token {row.id} ({row.role}, {row.name}); keep it now, it is not shown again:")
            print(secret)


@tokens_app.command("list")
def tokens_list() -> None:
    """Every token: id, name, role, created, last used, revoked."""
    from orchestrator.db.models import ApiToken
    from orchestrator.db.session import session_factory

    settings = Settings.from_env()
    table = Table("id", "name", "role", "created", "last used", "revoked")
    with session_factory(settings.effective_database_url)() as session:
        for row in session.scalars(select(ApiToken).order_by(ApiToken.created_at)):
            table.add_row(row.id, row.name, row.role, f"{row.created_at:%Y-%m-%d %H:%M}",
                          f"{row.last_used_at:%Y-%m-%d %H:%M}" if row.last_used_at else "–",
                          f"{row.revoked_at:%Y-%m-%d %H:%M}" if row.revoked_at else "")
    out.print(table)


@tokens_app.command("revoke")
def tokens_revoke(token_id: Annotated[str, typer.Argument(help="the token's id (not the secret)")]) -> None:
    """Revoke a token at once."""
    from orchestrator.api.auth import revoke_token
    from orchestrator.db.session import session_factory

    settings = Settings.from_env()
    with session_factory(settings.effective_database_url)() as session:
        done = revoke_token(session, token_id, actor=f"cli:{_user()}")
        session.commit()
    if not done:
        err.print(f"[red]error:[/red] no active token {token_id!r}")
        raise typer.Exit(1)
    err.print(f"token {token_id} revoked")


def _user() -> str:
    try:
        return os.getlogin()
    except OSError:
        return os.environ.get("USER", "unknown")


# --------------------------------------------------------------------------- submit (REST client)


class ApiClient:
    """A small client of the REST API; retries connection failures and 5xx (a submit keeps its Idempotency-Key)."""

    def __init__(self, base_url: str, token: str, tries: int = 4) -> None:
        self.http = httpx.Client(base_url=base_url.rstrip("/"), timeout=60.0,
                                 headers={"Authorization": f"Bearer {token}"})
        self.tries = tries

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        for attempt in range(self.tries):
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if attempt == self.tries - 1:
                    raise ApiUnreachable(f"cannot reach the API at {self.http.base_url}: {exc}") from exc
            else:
                if response.status_code < 500 or attempt == self.tries - 1:
                    return response
            time.sleep(0.5 * 2 ** attempt)
        raise AssertionError("unreachable")


class ApiUnreachable(Exception):
    pass


def _problems(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        return response.text[:2000]
    if isinstance(detail, list):
        lines = []
        for item in detail:
            loc = [str(p) for p in item.get("loc", []) if p not in ("body",)]
            lines.append(f"  {'.'.join(loc) or '(request)'}: {item.get('msg')}")
        return "\n".join(lines)
    return str(detail)


def build_body(file: Path | None, flags: dict[str, Any]) -> dict[str, Any]:
    """The batch request: the YAML/JSON file if given, with any flag given on the command line on top."""
    body: dict[str, Any] = {}
    if file is not None:
        loaded = yaml.safe_load(file.read_text())
        if not isinstance(loaded, dict):
            raise ValueError(f"{file}: expected a mapping (the body of POST /v1/batches)")
        body = loaded
    selection = dict(body.get("selection") or {})
    for key in ("ids", "family", "category", "role", "pack"):
        if flags.get(key) not in (None, []):
            selection[key] = flags[key]
    if selection:
        body["selection"] = selection
    if flags.get("models"):
        body["agents"] = [{"agent": flags.get("agent") or "react", "model": m,
                           **({"parameters": flags["parameters"]} if flags.get("parameters") else {})}
                          for m in flags["models"]]
    elif "agents" not in body:
        body["agents"] = [{"agent": flags.get("agent") or "react", "model": "scripted:honest"}]
    budget = dict(body.get("budget") or {})
    for key in ("max_steps", "max_tokens", "wall_timeout_s", "command_timeout_s"):
        if flags.get(key) is not None:
            budget[key] = flags[key]
    if budget:
        body["budget"] = budget
    for key in ("name", "conditions", "epochs", "seed"):
        if flags.get(key) not in (None, []):
            body[key] = flags[key]
    if flags.get("max_concurrent") is not None:
        body["concurrency"] = {**(body.get("concurrency") or {}), "max_runs": flags["max_concurrent"]}
    return body


def _parameters(items: list[str] | None) -> dict[str, Any]:
    parameters: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"--param expects KEY=VALUE, got {item!r}")
        parameters[key] = yaml.safe_load(value)
    return parameters


#: the longest wait between two tries while the API is away
MAX_BACKOFF_S = 30.0


def patient_get(client: ApiClient, path: str, patience_s: float, say: Callable[[str], None],
                first_delay_s: float = 1.0) -> httpx.Response:
    """GET ``path``, riding out an API that is away (connection refused, 5xx) for up to ``patience_s``.

    A batch goes on in the service while its API restarts, so a follower waits with a growing delay
    (capped at ``MAX_BACKOFF_S``) and says so, instead of giving up on the first failed poll.
    """
    away_since: float | None = None
    delay = first_delay_s
    while True:
        try:
            response = client.request("GET", path)
            if response.status_code < 500:
                if away_since is not None:
                    say(f"the API answers again after {time.monotonic() - away_since:.0f} s")
                return response
            why = f"{response.status_code} {_problems(response)}"
        except ApiUnreachable as exc:
            why = str(exc)
        now = time.monotonic()
        away_since = away_since if away_since is not None else now
        if now - away_since + delay > patience_s:
            raise ApiUnreachable(f"GET {path}: the API has been away for {now - away_since:.0f} s ({why}); "
                                 f"giving up after --patience {patience_s:.0f} s")
        say(f"the API is away ({why}); the batch goes on in the service; retrying in {delay:.0f} s")
        time.sleep(delay)
        delay = min(delay * 2, MAX_BACKOFF_S)


def follow_batch(client: ApiClient, batch_id: str, total: int, poll_s: float, quiet: bool,
                 patience_s: float = 900.0) -> dict[str, Any]:
    """A live progress bar until the batch is finished; returns the final batch."""
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[states]}"), TimeElapsedColumn(), console=err, disable=quiet) as progress:
        bar = progress.add_task(f"batch {batch_id}", total=total, states="")

        def say(message: str) -> None:
            progress.console.print(f"[yellow]{message}[/yellow]")

        while True:
            response = patient_get(client, f"/v1/batches/{batch_id}", patience_s, say)
            if response.status_code != 200:
                raise ApiUnreachable(f"GET /v1/batches/{batch_id}: {response.status_code} {_problems(response)}")
            batch = response.json()
            states = " ".join(f"{k}={v}" for k, v in sorted(batch["counts"].items()))
            eta = batch["progress"]["eta_s"]
            progress.update(bar, completed=batch["progress"]["finished"],
                            states=states + (f" eta {eta:.0f}s" if eta else ""))
            if batch["status"] in FINISHED_BATCH:
                return batch
            time.sleep(poll_s)


def submit(
    file: Annotated[Path | None, typer.Option("--file", "-f", help="YAML or JSON body of POST /v1/batches",
                                              exists=True, dir_okay=False)] = None,
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="scenario id (repeatable)")] = None,
    family: FamilyOpt = None,
    category: CategoryOpt = None,
    role: RoleOpt = None,
    pack: Annotated[str | None, typer.Option(help="scenario pack name")] = None,
    agent: Annotated[str | None, typer.Option(help="agent kind (default react)")] = None,
    model: Annotated[list[str] | None, typer.Option("--model", help="model spec, one agent each (repeatable)")] = None,
    param: Annotated[list[str] | None, typer.Option("--param", help="agent parameter KEY=VALUE (repeatable)")] = None,
    condition: Annotated[list[str] | None, typer.Option("--condition", help="pressure condition (repeatable)")] = None,
    epochs: Annotated[int | None, typer.Option()] = None,
    seed: Annotated[int | None, typer.Option()] = None,
    max_steps: Annotated[int | None, typer.Option(help="per-run step budget")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="per-run token budget")] = None,
    wall_time: Annotated[float | None, typer.Option(help="per-run wall-clock budget, seconds")] = None,
    command_timeout: Annotated[float | None, typer.Option(help="seconds per tool command")] = None,
    max_concurrent: Annotated[int | None, typer.Option(help="runs of this batch at once")] = None,
    name: Annotated[str | None, typer.Option()] = None,
    follow: Annotated[bool, typer.Option("--follow", help="show progress, then the results table")] = False,
    poll: Annotated[float, typer.Option(help="seconds between progress polls", min=0.1)] = 1.0,
    patience: Annotated[float, typer.Option(help="with --follow: seconds to keep retrying while the API is away",
                                            min=0.0)] = 900.0,
    api_url: Annotated[str | None, typer.Option(help="default: INTEGRITYLAB_API_URL")] = None,
    token: Annotated[str | None, typer.Option(help="default: INTEGRITYLAB_API_TOKEN")] = None,
    idempotency_key: Annotated[str | None, typer.Option(help="default: a new random key")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print machine-readable JSON")] = False,
) -> None:
    """Submit a batch to the REST API; with --follow, watch it and print the results table."""
    settings = Settings.from_env()
    token = token or os.environ.get("INTEGRITYLAB_API_TOKEN", "")
    if not token:
        err.print("[red]error:[/red] no API token: pass --token or set INTEGRITYLAB_API_TOKEN "
                  "(create one with `integritylab tokens create --role admin`)")
        raise typer.Exit(2)
    try:
        body = build_body(file, dict(
            ids=scenario or [], family=one_family(family), category=categories(category), role=one_role(role),
            pack=pack, agent=agent,
            models=model or [], parameters=_parameters(param), conditions=condition or [], epochs=epochs,
            seed=seed, max_steps=max_steps, max_tokens=max_tokens, wall_timeout_s=wall_time,
            command_timeout_s=command_timeout, max_concurrent=max_concurrent, name=name))
    except (ValueError, yaml.YAMLError) as exc:  # SelectionError is a ValueError
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    client = ApiClient(api_url or settings.api_url, token)
    key = idempotency_key or uuid.uuid4().hex
    batch: dict[str, Any] | None = None
    try:
        response = client.request("POST", "/v1/batches", json=body, headers={"Idempotency-Key": key})
        if response.status_code not in (200, 201):
            err.print(f"[red]error:[/red] the API refused the batch ({response.status_code}):\n{_problems(response)}")
            raise typer.Exit(2)
        batch = response.json()
        if not as_json:
            err.print(f"batch {batch['id']}: {batch['planned_runs']} runs queued")
        if not follow:
            if as_json:
                print(json.dumps(batch))
            else:
                print(batch["id"])
            return
        batch = follow_batch(client, batch["id"], batch["planned_runs"], poll, as_json, patience)
        summary = patient_get(client, f"/v1/batches/{batch['id']}/summary", patience,
                              lambda message: err.print(f"[yellow]{message}[/yellow]")).json()
    except ApiUnreachable as exc:
        err.print(f"[red]error:[/red] {exc}")
        if follow and isinstance(batch, dict) and "id" in batch:
            err.print(f"batch {batch['id']} goes on in the service: GET /v1/batches/{batch['id']} shows where it stands")
        raise typer.Exit(1) from exc
    if as_json:
        print(json.dumps({"batch": batch, "summary": summary}))
        return
    rows = [AgentSummary.model_validate(row) for row in summary["rows"]]
    out.print(summary_table(rows, f"batch {batch['id']} {batch['name']}".strip()))
    out.print(LEGEND, style="dim")
    for error in summary["errors"]:
        out.print(f"[yellow]Error[/yellow] {error['id']} {error['scenario']}: layer {error['layer']}: "
                  f"{error['message']}")
    if batch["status"] == "cancelled":
        err.print(f"batch {batch['id']} was cancelled")
