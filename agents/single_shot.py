"""The single-shot agent: one request, one answer, for probe and mcq scenarios.

The request goes through the run's model gateway with the official ``openai``
SDK (Chat Completions), like any other agent's model calls: the ``model_call``
event is the gateway's recording of the exchange (wire request and reply,
status, usage, latency), its token check and budget (one call) apply, and the
upstream model is reached only by the gateway. The agent records the answer as an
assistant ``message`` and an ``exit``. An empty completion is recorded as an
empty message with exit message "empty completion" (TRACES counts a persistent
empty completion as a refusal — that policy is the judge's, not the agent's).
An upstream failure comes back from the gateway as an HTTP error and is raised
as the same :class:`ModelError` the provider raised, with its layer and
whether a retry can help (the gateway's error ``code`` and ``x-should-retry``).

Why a shared gateway server. A run's gateway with a server of its own
(:class:`RunGateway` on its own socket, as sandboxed agents get) cost about
236 ms a run when measured — ~16 ms to start uvicorn, ~67 ms to build an HTTP
client (loading the TLS certificate store), ~11 ms for the call, ~140 ms to
stop uvicorn (it polls for shutdown every 100 ms) — against ~0.1 ms for a
direct provider call, and the single-shot agent runs thousands of probes.
So this agent registers its run with the worker process's
:func:`shared_gateway_host`: one uvicorn server on a private 0600 Unix socket,
started on first use in each process (and anew after a fork), reached through
one kept-alive HTTP client without TLS.
Each run still has its own :class:`RunGateway` — a fresh token, its own sink,
budgets and totals — so the recording is the same code path as a per-run
gateway's; only the server is shared, which is safe because no sandbox is
involved (nothing but this process's user can connect). The exchange then
costs ~4-8 ms (SDK, HTTP over the socket, the gateway app, recording; the
whole agent run took a median of ~7 ms with a scripted model, against ~0.1 ms
calling the provider directly).

Sink errors. The gateway records from its server thread, where an exception
from the sink cannot reach the orchestrator; the run's sink is wrapped so such
an exception (the token budget of ``orchestrator.execution.BudgetedSink``, a
cancelled run's stop) is raised again here, in the agent's thread, once the
call returns.
"""

from __future__ import annotations

from typing import Any

import openai

from agents.base import Agent, AgentBudget, AgentOutcome, AgentTask, register_agent
from agents.gateway.budget import GatewayBudget
from agents.gateway.run_gateway import RunGateway, shared_gateway_host
from agents.models.base import ModelError, ModelProvider
from agents.models.registry import make_provider
from agents.models.sdk_common import upstream_message
from sandboxes.base import Sandbox
from scenarios.trajectory import (
    EventKind,
    EventSink,
    ExitPayload,
    ExitReason,
    Layer,
    MessagePayload,
    Payload,
    TrajectoryEvent,
)


class _RelaySink:
    """Passes events on; keeps the first exception the inner sink raised, for :meth:`reraise`."""

    def __init__(self, inner: EventSink) -> None:
        self.inner = inner
        self.failure: BaseException | None = None

    def emit(self, kind: EventKind, payload: Payload, step: int | None = None) -> TrajectoryEvent | None:
        try:
            return self.inner.emit(kind, payload, step)
        except Exception as exc:
            self.failure = self.failure or exc
            return None

    def reraise(self) -> None:
        if self.failure is not None:
            raise self.failure


def gateway_error(exc: openai.APIStatusError) -> ModelError:
    """The gateway's HTTP error as the ModelError behind it.

    A provider failure is a 502 whose code names the layer (``model_error``) and
    whose message carries it as a prefix ("model error: …"); everything else the
    gateway refuses (a budget, a bad request) is the gateway layer's.
    """
    body = exc.body if isinstance(exc.body, dict) else {}
    message = upstream_message(exc.body, exc.message)
    layer = Layer.gateway.value
    named = str(body.get("code") or "").removesuffix("_error")
    if exc.status_code == 502 and named in Layer.__members__:
        layer = named
        message = message.removeprefix(f"{named} error: ")
    elif exc.status_code != 502:
        message = f"gateway refused the call ({exc.status_code}): {message}"
    retryable = exc.response.headers.get("x-should-retry") == "true"
    return ModelError(message, layer=layer, retryable=retryable)


class SingleShotAgent(Agent):
    name = "single_shot"
    needs_sandbox = False

    def __init__(self, model: ModelProvider) -> None:
        self.model = model

    def run(self, task: AgentTask, sandbox: Sandbox | None, sink: EventSink, budget: AgentBudget) -> AgentOutcome:
        host = shared_gateway_host()
        relay = _RelaySink(sink)
        with RunGateway(self.model, relay, budget=GatewayBudget(calls=1), host=host) as gateway:  # type: ignore[arg-type]
            client = openai.OpenAI(api_key=gateway.token, base_url="http://gateway/v1",
                                   http_client=host.http_client(), max_retries=0, timeout=budget.wall_timeout_s)
            messages: list[Any] = [{"role": "system", "content": task.system_prompt},
                                   {"role": "user", "content": task.task_prompt}]
            try:
                completion = client.chat.completions.create(
                    model=self.model.spec, messages=messages, temperature=budget.temperature, seed=task.seed)
            except openai.APIStatusError as exc:
                relay.reraise()
                raise gateway_error(exc) from exc
            except openai.APIError as exc:  # no HTTP answer at all (connection lost, timed out)
                relay.reraise()
                raise ModelError(f"the run's model gateway did not answer: {type(exc).__name__}: {exc}",
                                 layer=Layer.gateway.value, retryable=True) from exc
            usage = gateway.usage
        relay.reraise()
        text = (completion.choices[0].message.content if completion.choices else None) or ""
        sink.emit(EventKind.message, MessagePayload(role="assistant", text=text), step=1)
        message = "empty completion" if not text.strip() else ""
        sink.emit(EventKind.exit, ExitPayload(reason=ExitReason.done, message=message), step=1)
        return AgentOutcome(exit_reason=ExitReason.done, message=message, steps=1,
                            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)


@register_agent("single_shot")
def make_single_shot_agent(model: str = "scripted:honest") -> SingleShotAgent:
    return SingleShotAgent(make_provider(model))
