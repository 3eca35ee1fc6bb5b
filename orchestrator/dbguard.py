"""A worker that loses its database stops taking work, instead of failing every message it takes.

Why: a task that cannot reach the database used to fail at once and be
acknowledged, so one worker cut off from PostgreSQL dropped ~100 messages in 15 s
while the healthy workers beside it slowed down. Now a delivery that fails
because the database is unavailable is never acknowledged as done: the worker
process waits, polling the database once a second up to ``db_wait_s``, so it
takes no other message meanwhile (prefetch is one). It logs that it is waiting
and marks itself in Redis, which the worker health check reads. Then it hands the
message back to the broker as a retry.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger(__name__)
DOWN_KEY_PREFIX = "integritylab:db-down:"  # + host:pid, value: since when (unix time), with a TTL


def database_unavailable(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what caused it) says the database could not be reached or the connection broke."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, (OperationalError, InterfaceError)):
            return True
        if isinstance(exc, DBAPIError) and exc.connection_invalidated:
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def database_answers(sessions: sessionmaker[Session]) -> bool:
    try:
        with sessions() as session:
            session.execute(text("SELECT 1"))
        return True
    except (OperationalError, InterfaceError, DBAPIError):
        return False


def wait_for_database(sessions: sessionmaker[Session], max_wait_s: float, *, poll_s: float = 1.0,
                      mark: Callable[[bool], None] = lambda _down: None) -> bool:
    """Block until the database answers (True) or ``max_wait_s`` passes (False), saying so in the log."""
    log.warning("the database is unavailable: this worker takes no work until it answers (waiting up to %.0f s)",
                max_wait_s)
    mark(True)
    deadline = time.monotonic() + max_wait_s
    while True:
        if database_answers(sessions):
            log.warning("the database answers again; taking work")
            mark(False)
            return True
        if time.monotonic() >= deadline:
            log.warning("the database is still unavailable after %.0f s; handing the message back", max_wait_s)
            return False
        time.sleep(poll_s)


def redis_marker(client: object | None, identity: str, ttl_s: float) -> Callable[[bool], None]:
    """``mark(down)`` for :func:`wait_for_database`: a Redis key per worker process while its database is down."""
    key = DOWN_KEY_PREFIX + identity

    def mark(down: bool) -> None:
        if client is None:
            return
        try:
            if down:
                client.set(key, str(time.time()), ex=max(1, int(ttl_s)))  # type: ignore[attr-defined]
            else:
                client.delete(key)  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - the marker is advice for the health check; say it is missing
            log.warning("could not %s the database-down marker %s: %s", "set" if down else "clear", key, exc)

    return mark


def down_markers(client: object, host: str | None = None) -> dict[str, float]:
    """Worker processes on ``host`` (default: this one) whose database is down, and since when."""
    pattern = f"{DOWN_KEY_PREFIX}{host or socket.gethostname()}:*"
    found: dict[str, float] = {}
    for key in client.scan_iter(pattern):  # type: ignore[attr-defined]
        value = client.get(key)  # type: ignore[attr-defined]
        name = key.decode() if isinstance(key, bytes) else str(key)
        found[name[len(DOWN_KEY_PREFIX):]] = float(value) if value else 0.0
    return found
