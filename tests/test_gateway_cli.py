"""``integritylab gateway serve`` as a real process, used through the official openai SDK."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import openai
import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_gateway_serve_answers_with_the_scripted_policy() -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli.app", "gateway", "serve", "--port", str(port), "--token", "T",
         "--model", "scripted:refuser"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("gateway did not start listening")
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="T", max_retries=0)
        tools = [{"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}]
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}], tools=tools)
        assert reply.choices[0].message.tool_calls[0].function.name == "shell"
        text = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "1. Do it."}])
        assert "can't help" in text.choices[0].message.content
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="wrong", max_retries=0).models.list()
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert f"base URL: http://127.0.0.1:{port}/v1" in out and "token:    T" in out
