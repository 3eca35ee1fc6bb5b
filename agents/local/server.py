"""One llama.cpp server per local model, as a managed child process shared by the runs of this process.

The server binds a free loopback port, is health-checked before first use,
keeps its log in the data directory, and is stopped when this process exits
(its child also exits by itself if this process dies without cleaning up).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from agents.local.serve_main import READY
from agents.models.base import ModelError

START_TIMEOUT_S = 300.0  # a cold 1.1 GB model under load took ~14 s; leave a wide margin
THREADS_ENV = "INTEGRITYLAB_LOCAL_THREADS"


def default_threads() -> int:
    explicit = os.environ.get(THREADS_ENV, "").strip()
    if explicit.isdigit() and int(explicit) > 0:
        return int(explicit)
    return max(1, min(os.cpu_count() or 1, 4))


@dataclass
class LlamaServer:
    """A running server: its URL (``http://127.0.0.1:PORT``), process and log file."""

    weights: Path
    template: Path
    n_ctx: int
    threads: int
    log_path: Path
    url: str = ""
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        argv = [sys.executable, "-m", "agents.local.serve_main", str(self.weights), "--template", str(self.template),
                "--ctx", str(self.n_ctx), "--threads", str(self.threads), "--parent", str(os.getpid())]
        self.process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        log.close()
        self.url = self._wait_ready(timeout)
        self._wait_healthy(timeout)

    def _wait_ready(self, timeout: float) -> str:
        """The URL the child prints once loaded; its stdout is drained afterwards so it never blocks."""
        assert self.process is not None
        found: list[str] = []
        ready = threading.Event()
        stdout = self.process.stdout

        def read() -> None:
            assert stdout is not None
            for raw in stdout:
                line = raw.decode("utf-8", "replace").strip()
                if not ready.is_set() and line.startswith(READY + " "):
                    found.append(line.split(" ", 1)[1])
                    ready.set()
            ready.set()  # the child exited (or closed stdout) without becoming ready

        threading.Thread(target=read, daemon=True, name="llama-stdout").start()
        ready.wait(timeout)
        if found:
            return found[0]
        self.stop()
        raise ModelError(f"the llama.cpp server for {self.weights.name} did not start within {timeout:.0f}s "
                         f"(exit {self.process.returncode}); its log {self.log_path} ends: {self.log_tail()}",
                         layer="model")

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            try:
                response = httpx.get(f"{self.url}/health", timeout=5.0)
                if response.status_code == 200:
                    return
                last = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                last = str(exc)
            time.sleep(0.2)
        self.stop()
        raise ModelError(f"the llama.cpp server at {self.url} is not healthy after {timeout:.0f}s ({last}); "
                         f"log: {self.log_path}", layer="model")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def log_tail(self, lines: int = 5) -> str:
        try:
            return " / ".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


_LOCK = threading.Lock()
_SERVERS: dict[tuple[str, str, int, int], LlamaServer] = {}


def shared_server(weights: Path, template: Path, n_ctx: int, log_dir: Path, threads: int | None = None) -> LlamaServer:
    """The running server for these weights and settings, started on first use (and again if it died)."""
    threads = threads or default_threads()
    key = (str(weights), str(template), n_ctx, threads)
    with _LOCK:
        server = _SERVERS.get(key)
        if server is not None and server.alive():
            return server
        server = LlamaServer(weights, template, n_ctx, threads,
                             log_path=log_dir / f"llama-{weights.stem}-{os.getpid()}.log")
        server.start()
        _SERVERS[key] = server
        return server


def stop_all() -> None:
    with _LOCK:
        for server in _SERVERS.values():
            server.stop()
        _SERVERS.clear()


atexit.register(stop_all)
