"""Run an ASGI app (the gateway) on loopback in a background thread.

Tests and the orchestrator need a real HTTP endpoint without a subprocess: the
socket is bound here before uvicorn starts, so the port is known (and taken)
up front with no pick-then-bind race, and ``start`` returns only once the
server accepts connections.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn


class BackgroundServer:
    """A uvicorn server for ``app`` on ``host:port`` (port 0 = any free one) in a daemon thread."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0,
                 startup_timeout: float = 10.0, log_level: str = "warning") -> None:
        self.app = app
        self.host = host
        self._requested_port = port
        self.startup_timeout = startup_timeout
        self.log_level = log_level
        self.port: int | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """The server root, e.g. ``http://127.0.0.1:PORT``."""
        if self.port is None:
            raise RuntimeError("server is not started")
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style API base, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    def start(self) -> BackgroundServer:
        if self._thread is not None:
            raise RuntimeError("server already started")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self._requested_port))
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, host=self.host, port=self.port, log_level=self.log_level,
                                lifespan="off", access_log=False, timeout_graceful_shutdown=2)
        self._server = server = uvicorn.Server(config)

        def run() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as exc:  # SystemExit on startup failure included
                self._error = exc
            finally:
                sock.close()

        self._thread = threading.Thread(target=run, name=f"gateway-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout
        while not server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"server on port {self.port} exited during startup: {self._error!r}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server on port {self.port} did not start within {self.startup_timeout}s")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Ask uvicorn to exit and wait for the thread; safe to call twice."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None
        self._server = None

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
