"""A run's gateway budgets (calls, input/output tokens, cost, wall time) through the real openai and anthropic SDKs.

Every call goes over the RunGateway's Unix socket; past a budget the SDK raises
a clear error naming the budget, its limit and what was used, on all three APIs
(Chat Completions, Responses, Anthropic Messages), streamed or not, and the run
records an ``error`` event (layer gateway, ``budget_exhausted``).
"""

from __future__ import annotations

import re
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anthropic
import httpx
import openai
import pytest

try:  # recent anthropic SDKs take their HTTP client from httpx2, a fork of httpx with the same API
    import httpx2 as anthropic_httpx
except ImportError:  # pragma: no cover - older SDKs use httpx itself
    anthropic_httpx = httpx  # type: ignore[no-redef]

from agents.gateway.budget import BudgetMeter, GatewayBudget, ModelPrice, parse_model_prices, price_for
from agents.gateway.run_gateway import GatewayHost, RunGateway
from agents.models.base import ModelProvider, ModelRequest, ModelResponse, Usage
from agents.models.registry import make_provider
from orchestrator.settings import Settings
from scenarios.trajectory import EventKind, MemorySink

CHAT = [{"role": "user", "content": "Report the results."}]


class Fixed(ModelProvider):
    """Answers 'ok', reporting 1000 input and 700 output tokens a call."""

    spec = "openai:fixed-1"

    def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(content="ok", usage=Usage(input_tokens=1000, output_tokens=700), model="fixed-1")


def _http(gw: RunGateway) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(gw.socket_path)))


def _anthropic(token: str, socket_path, **kw) -> anthropic.Anthropic:  # noqa: ANN001
    http = anthropic_httpx.Client(transport=anthropic_httpx.HTTPTransport(uds=str(socket_path)))
    return anthropic.Anthropic(api_key=token, base_url="http://gateway", http_client=http, **kw)


@contextmanager
def gateway(budget: GatewayBudget, **kwargs) -> Iterator[tuple[RunGateway, MemorySink, openai.OpenAI,
                                                                anthropic.Anthropic]]:
    sink = MemorySink()
    kwargs.setdefault("price", ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0))
    with RunGateway(Fixed(), sink, budget=budget, **kwargs) as gw, _http(gw) as http:
        # default SDK retries on: x-should-retry: false must stop them
        oai = openai.OpenAI(api_key=gw.token, base_url="http://gateway/v1", http_client=http)
        ant = _anthropic(gw.token, gw.socket_path)
        with ant:
            yield gw, sink, oai, ant


def _chat(oai: openai.OpenAI, **kw):
    return oai.chat.completions.create(model="m", messages=CHAT, **kw)


def _messages(ant: anthropic.Anthropic, **kw):
    return ant.messages.create(model="m", max_tokens=64, messages=CHAT, **kw)


def _errors(sink: MemorySink) -> list[dict]:
    return [e.payload for e in sink.events if e.kind == EventKind.error]


def _assert_refusal_recorded(sink: MemorySink, needle: str, count: int = 1) -> None:
    errors = _errors(sink)
    assert len(errors) == count, errors
    for error in errors:
        assert error["layer"] == "gateway" and error["error_type"] == "budget_exhausted"
        assert needle in error["message"]


def test_call_budget_on_chat_completions() -> None:
    with gateway(GatewayBudget(calls=1)) as (gw, sink, oai, _):
        assert _chat(oai).choices[0].message.content == "ok"
        with pytest.raises(openai.RateLimitError) as refused:
            _chat(oai)
        assert refused.value.status_code == 429 and refused.value.code == "call_budget_exhausted"
        assert "call budget of 1 exhausted" in str(refused.value)
        assert gw.refused == 1  # not retried
    _assert_refusal_recorded(sink, "call budget of 1 exhausted")


def test_input_token_budget_lets_the_crossing_call_finish() -> None:
    with gateway(GatewayBudget(input_tokens=1500)) as (gw, sink, oai, _):
        _chat(oai)  # 1000 used
        _chat(oai)  # starts under the limit, ends at 2000
        with pytest.raises(openai.RateLimitError, match=r"input-token budget of 1500 exhausted \(2000 used\)") as e:
            _chat(oai)
        assert e.value.code == "input_token_budget_exhausted"
    _assert_refusal_recorded(sink, "input-token budget of 1500 exhausted (2000 used)")
    assert [e.kind for e in sink.events] == [EventKind.model_call, EventKind.model_call, EventKind.error]


def test_output_token_budget_on_anthropic_messages() -> None:
    with gateway(GatewayBudget(output_tokens=1000)) as (gw, sink, _, ant):
        assert _messages(ant).content[0].text == "ok"
        _messages(ant)
        with pytest.raises(anthropic.RateLimitError) as refused:
            _messages(ant)
        assert refused.value.status_code == 429
        assert refused.value.body["error"]["message"] == "output-token budget of 1000 exhausted (1400 used)"
        assert gw.refused == 1
    _assert_refusal_recorded(sink, "output-token budget of 1000 exhausted (1400 used)")


def test_cost_budget_on_responses() -> None:
    # 1000 input at $1/M + 700 output at $2/M = $0.0024 a call
    with gateway(GatewayBudget(cost_usd=0.004)) as (gw, sink, oai, _):
        assert oai.responses.create(model="m", input="Report the results.").output_text == "ok"
        oai.responses.create(model="m", input="Report the results.")
        with pytest.raises(openai.RateLimitError, match=r"cost budget of \$0.004 exhausted \(\$0.0048 used\)"):
            oai.responses.create(model="m", input="Report the results.")
        usage = gw.usage
    assert usage.calls == 2 and usage.refused == 1 and usage.cost_usd == pytest.approx(0.0048)
    assert usage.input_tokens == 2000 and usage.output_tokens == 1400 and usage.exhausted == "cost_usd"
    _assert_refusal_recorded(sink, "cost budget of $0.004 exhausted")


def test_wall_time_budget_counts_from_gateway_start() -> None:
    # 3 s, not less: on a loaded machine the first call alone has taken 0.9 s from the gateway's start
    with gateway(GatewayBudget(wall_time_s=3.0)) as (gw, sink, oai, ant):
        _chat(oai)
        time.sleep(3.05)
        with pytest.raises(openai.RateLimitError, match=r"wall-time budget of 3s exhausted \(\d+\.\ds elapsed\)"):
            _chat(oai)
        with pytest.raises(anthropic.RateLimitError, match="wall-time budget of 3s exhausted"):
            _messages(ant)
    _assert_refusal_recorded(sink, "wall-time budget of 3s exhausted", count=2)


def test_streamed_requests_are_refused_the_same_way_on_all_three_apis() -> None:
    with gateway(GatewayBudget(output_tokens=700)) as (gw, sink, oai, ant):
        with _chat(oai, stream=True, stream_options={"include_usage": True}) as stream:
            chunks = list(stream)
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "ok"
        assert chunks[-1].usage.completion_tokens == 700
        message = "output-token budget of 700 exhausted (700 used)"
        with pytest.raises(openai.RateLimitError, match=re.escape(message)):
            _chat(oai, stream=True)
        with pytest.raises(openai.RateLimitError, match=re.escape(message)):
            oai.responses.create(model="m", input="Report the results.", stream=True)
        with pytest.raises(anthropic.RateLimitError, match=re.escape(message)):
            _messages(ant, stream=True)
        with pytest.raises(anthropic.RateLimitError, match=re.escape(message)):
            with ant.messages.stream(model="m", max_tokens=64, messages=CHAT) as s:
                s.get_final_message()
        assert gw.usage.refused == 4 and gw.usage.calls == 1
    _assert_refusal_recorded(sink, message, count=4)
    (call,) = [e for e in sink.events if e.kind == EventKind.model_call]
    assert call.payload["response"]["stream"] is True and call.payload["output_tokens"] == 700
    apis = [e["message"].rsplit("refused a ", 1)[1] for e in _errors(sink)]
    assert apis == ["openai-chat call", "openai-responses call", "anthropic-messages call", "anthropic-messages call"]


def test_usage_totals_and_scripted_models_are_free() -> None:
    sink = MemorySink()
    with RunGateway(make_provider("scripted:honest"), sink, budget=GatewayBudget(cost_usd=1.0), prices={}) as gw:
        with _http(gw) as http:
            oai = openai.OpenAI(api_key=gw.token, base_url="http://gateway/v1", http_client=http)
            _chat(oai)
            _chat(oai)
        usage = gw.usage
    assert usage.calls == 2 and usage.cost_usd == 0.0 and usage.refused == 0 and usage.exhausted is None
    assert usage.input_tokens > 0 and usage.output_tokens > 0 and usage.wall_time_s > 0
    calls = [e.payload for e in sink.events if e.kind == EventKind.model_call]
    assert usage.input_tokens == sum(c["input_tokens"] for c in calls)


def test_no_price_means_no_cost_and_a_cost_budget_needs_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INTEGRITYLAB_MODEL_PRICES", raising=False)
    assert RunGateway(Fixed(), MemorySink()).usage.cost_usd is None
    with pytest.raises(ValueError, match="cost budget needs the model's price"):
        RunGateway(Fixed(), MemorySink(), budget=GatewayBudget(cost_usd=1.0))
    monkeypatch.setenv("INTEGRITYLAB_MODEL_PRICES", '{"openai:*": {"input_per_mtok": 3, "output_per_mtok": 15}}')
    gw = RunGateway(Fixed(), MemorySink(), budget=GatewayBudget(cost_usd=1.0))
    assert gw.price == ModelPrice(input_per_mtok=3, output_per_mtok=15)
    assert Settings.from_env().model_prices == {"openai:*": ModelPrice(input_per_mtok=3, output_per_mtok=15)}


def test_price_lookup_and_parsing() -> None:
    prices = parse_model_prices('{"openai:*": {"input_per_mtok": 1, "output_per_mtok": 2}, '
                                '"openai:gpt-4o*": {"input_per_mtok": 2.5, "output_per_mtok": 10}, '
                                '"openai:gpt-4o-mini": {"input_per_mtok": 0.15, "output_per_mtok": 0.6}}')
    assert price_for("openai:gpt-4o-mini", prices).input_per_mtok == 0.15  # exact
    assert price_for("openai:gpt-4o-2024-08-06", prices).input_per_mtok == 2.5  # longest pattern
    assert price_for("openai:o3", prices).input_per_mtok == 1
    assert price_for("anthropic:claude-sonnet-4-5", prices) is None
    assert price_for("scripted:honest", {}) == ModelPrice(input_per_mtok=0, output_per_mtok=0)
    assert ModelPrice(input_per_mtok=2.5, output_per_mtok=10).cost(Usage(input_tokens=1_000_000, output_tokens=100_000)) \
        == pytest.approx(3.5)
    for bad in ("[1, 2]", "{", '{"openai:x": {"input_per_mtok": -1, "output_per_mtok": 1}}',
                '{"openai:x": {"input": 1}}'):
        with pytest.raises(ValueError, match="INTEGRITYLAB_MODEL_PRICES"):
            parse_model_prices(bad)


def test_budget_arguments() -> None:
    gw = RunGateway(Fixed(), MemorySink(), budget_calls=3, budget=GatewayBudget(output_tokens=10))
    assert gw.budget == GatewayBudget(calls=3, output_tokens=10) and gw.budget_calls == 3
    with pytest.raises(ValueError, match="once"):
        RunGateway(Fixed(), MemorySink(), budget_calls=3, budget=GatewayBudget(calls=2))
    with pytest.raises(ValueError):
        RunGateway(Fixed(), MemorySink(), budget_calls=-1)
    with pytest.raises(ValueError):
        GatewayBudget(wall_time_s=0)


def test_meter_refusal_order_and_release() -> None:
    now = [0.0]
    meter = BudgetMeter(GatewayBudget(calls=2, wall_time_s=10), None, clock=lambda: now[0])
    meter.start()
    assert meter.admit() is None and meter.admit() is None
    meter.release()  # a call that never reached the provider gives its slot back
    assert meter.admit() is None
    refusal = meter.admit()
    assert refusal is not None and refusal.message == "call budget of 2 exhausted"
    now[0] = 12.5
    assert meter.usage().wall_time_s == 12.5 and meter.usage().exhausted == "calls"


def test_runs_on_a_shared_host_keep_their_own_token_sink_and_budget() -> None:
    host = GatewayHost().start()
    try:
        a_sink, b_sink = MemorySink(), MemorySink()
        a = RunGateway(Fixed(), a_sink, budget_calls=1, host=host).start()
        b = RunGateway(Fixed(), b_sink, price=ModelPrice(input_per_mtok=0, output_per_mtok=0), host=host).start()
        assert a.socket_path == b.socket_path == host.socket_path and len(host) == 2
        # only this process's user may connect: nothing of a shared host is ever mounted into a sandbox
        assert stat.S_IMODE(host.socket_path.stat().st_mode) == 0o600
        assert stat.S_IMODE(host.socket_path.parent.stat().st_mode) == 0o700
        http = host.http_client()
        clients = {gw: openai.OpenAI(api_key=gw.token, base_url="http://gateway/v1", http_client=http,
                                     max_retries=0) for gw in (a, b)}
        _chat(clients[a])
        with pytest.raises(openai.RateLimitError, match="call budget of 1 exhausted"):
            _chat(clients[a])
        _chat(clients[b])
        _chat(clients[b])
        assert (a.usage.calls, a.usage.refused, b.usage.calls, b.usage.refused) == (1, 1, 2, 0)
        assert [e.kind for e in a_sink.events] == [EventKind.model_call, EventKind.error]
        assert [e.kind for e in b_sink.events] == [EventKind.model_call, EventKind.model_call]
        a.stop()  # its token stops working at once; the other run is untouched
        with pytest.raises(openai.AuthenticationError):
            _chat(clients[a])
        with pytest.raises(anthropic.AuthenticationError):
            with _anthropic("nope", host.socket_path, max_retries=0) as ant:
                ant.messages.create(model="m", max_tokens=8, messages=CHAT)
        _chat(clients[b])
        b.stop()
        assert len(host) == 0 and len(a_sink.events) == 2
    finally:
        path = host.socket_path
        host.stop()
    assert not path.parent.exists()


def test_combined_token_budget_counts_input_and_output_together() -> None:
    """``tokens`` is the orchestrator's ``max_tokens``: input + output over the run."""
    meter = BudgetMeter(GatewayBudget(tokens=3000), None)
    assert meter.admit() is None
    meter.add(Usage(input_tokens=1000, output_tokens=700))
    assert meter.admit() is None  # 1700 < 3000
    meter.add(Usage(input_tokens=1000, output_tokens=700))
    refusal = meter.admit()
    assert refusal is not None and refusal.budget == "tokens"
    assert refusal.message == "token budget of 3000 exhausted (3400 used)" and refusal.code == "token_budget_exhausted"
