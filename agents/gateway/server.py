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


class ServerThread:
    """uvicorn serving one socket the caller already bound, in a daemon thread.

    Binding first (rather than letting uvicorn bind) means there is no race for the
    port or path; ``start`` returns only once the server accepts connections.
    """

    def __init__(self, config: uvicorn.Config, sock: socket.socket, name: str) -> None:
        self.server = uvicorn.Server(config)
        self.sock = sock
        self.name = name
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    def start(self, timeout: float) -> None:
        """Serve and wait until started; on failure stop and raise RuntimeError naming ``self.name``."""
        server, sock = self.server, self.sock

        def run() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as exc:  # noqa: BLE001 - SystemExit on startup failure included
                self.error = exc
            finally:
                sock.close()

        self.thread = threading.Thread(target=run, name=self.name, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self.thread.is_alive():
                self.stop()
                raise RuntimeError(f"{self.name} exited during startup: {self.error!r}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.name} did not start within {timeout}s")
            time.sleep(0.01)

    def stop(self, timeout: float = 5.0) -> None:
        """Ask uvicorn to exit and wait for the thread; safe to call twice."""
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout)
        self.thread = None


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
        self._runner: ServerThread | None = None

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
        if self._runner is not None:
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
        runner = ServerThread(config, sock, f"gateway-{self.port}")
        runner.start(self.startup_timeout)
        self._runner = runner
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Ask uvicorn to exit and wait for the thread; safe to call twice."""
        if self._runner is not None:
            self._runner.stop(timeout)
        self._runner = None

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
