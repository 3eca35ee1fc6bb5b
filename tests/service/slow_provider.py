"""Test-only model providers, imported by API and worker processes through ``INTEGRITYLAB_PLUGINS``.

* ``slow:<policy>`` — a scripted policy that sleeps ``INTEGRITYLAB_TEST_SLOW_S``
  seconds (default 0.4) before each reply, so a run lasts long enough to kill
  its worker in the middle.
* ``flaky:<policy>`` — a scripted policy whose first reply in a process raises a
  retryable upstream error (an infrastructure failure, not agent behaviour).
* ``broken:<policy>`` — always raises a non-retryable upstream error.
"""

from __future__ import annotations

import os
import time

from agents.models.base import ModelError, ModelProvider, ModelRequest, ModelResponse
from agents.models.registry import register_provider
from agents.scripted.provider import make_scripted

FLAKY_FAILURES: dict[str, int] = {}


class SlowProvider(ModelProvider):
    def __init__(self, policy: str) -> None:
        self.inner = make_scripted(policy)
        self.delay = float(os.environ.get("INTEGRITYLAB_TEST_SLOW_S", "0.4"))

    def complete(self, request: ModelRequest) -> ModelResponse:
        time.sleep(self.delay)
        return self.inner.complete(request)


class FlakyProvider(ModelProvider):
    def __init__(self, policy: str, always: bool = False) -> None:
        self.inner = make_scripted(policy)
        self.policy = policy
        self.always = always

    def complete(self, request: ModelRequest) -> ModelResponse:
        if self.always:
            raise ModelError("upstream rejected the request: 400 invalid model", retryable=False)
        if FLAKY_FAILURES.get(self.policy, 0) == 0:
            FLAKY_FAILURES[self.policy] = 1
            raise ModelError("upstream returned 503 three times", retryable=True)
        return self.inner.complete(request)


@register_provider("slow")
def _slow(name: str) -> ModelProvider:
    return SlowProvider(name)


@register_provider("flaky")
def _flaky(name: str) -> ModelProvider:
    return FlakyProvider(name)


@register_provider("broken")
def _broken(name: str) -> ModelProvider:
    return FlakyProvider(name, always=True)
