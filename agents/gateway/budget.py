"""A run's model budgets at the gateway: calls, input/output tokens, cost and wall time.

:class:`GatewayBudget` says what a run may use (every limit optional);
:class:`BudgetMeter` keeps the running totals and decides, call by call,
whether the next one may reach the provider.

The size of a reply is not known before it arrives, so token and cost limits
are checked when a call *starts*: the call that crosses a line completes and is
counted in full, the next one is refused. Calls are reserved when admitted, so
the call limit is exact even with concurrent requests; concurrent calls may
together overshoot a token or cost limit by what they were already using.
Wall time counts from :meth:`BudgetMeter.start` (the gateway's start).

Cost needs a price: :class:`ModelPrice` (USD per million input / output
tokens). :func:`price_for` finds the price of a model spec in a mapping — an
exact spec first, else the longest matching ``fnmatch`` pattern such as
``openai:*`` — which the orchestrator reads from ``INTEGRITYLAB_MODEL_PRICES``
(JSON ``{"openai:gpt-4o": {"input_per_mtok": 2.5, "output_per_mtok": 10}}``);
scripted models cost nothing.
"""

from __future__ import annotations

import fnmatch
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.models.base import Usage

PRICES_ENV = "INTEGRITYLAB_MODEL_PRICES"
#: scripted policies are free test doubles
FREE = ("scripted:*",)


class GatewayBudget(BaseModel):
    """What one run may use through its gateway; None = no limit."""

    model_config = ConfigDict(extra="forbid")

    calls: int | None = Field(default=None, ge=0, description="exchanges that reach the provider")
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    tokens: int | None = Field(default=None, ge=0, description="input + output tokens together")
    cost_usd: float | None = Field(default=None, ge=0, description="needs a ModelPrice for the model")
    wall_time_s: float | None = Field(default=None, gt=0, description="counted from the gateway's start")


class ModelPrice(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)

    def cost(self, usage: Usage) -> float:
        return (usage.input_tokens * self.input_per_mtok + usage.output_tokens * self.output_per_mtok) / 1_000_000


class GatewayUsage(BaseModel):
    """A run's totals at the gateway, for the run outcome."""

    calls: int = 0  # exchanges that reached (or are reaching) the provider
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None: no price known for the model
    refused: int = 0  # calls refused because a budget was exhausted
    wall_time_s: float = 0.0
    exhausted: str | None = None  # the budget named by the first refusal, e.g. "output_tokens"


def parse_model_prices(value: str) -> dict[str, ModelPrice]:
    """``INTEGRITYLAB_MODEL_PRICES``: a JSON object mapping model spec (or fnmatch pattern) to a price."""
    where = PRICES_ENV
    try:
        data = json.loads(value)
    except ValueError as exc:
        raise ValueError(f"{where}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f'{where}: expected a JSON object like {{"openai:gpt-4o": '
                         f'{{"input_per_mtok": 2.5, "output_per_mtok": 10}}}}')
    prices: dict[str, ModelPrice] = {}
    for spec, price in data.items():
        try:
            prices[spec] = ModelPrice.model_validate(price)
        except ValidationError as exc:
            raise ValueError(f"{where}: bad price for {spec!r}: {exc.errors(include_url=False)}") from None
    return prices


def model_prices_from_env() -> dict[str, ModelPrice]:
    value = os.environ.get(PRICES_ENV, "").strip()
    return parse_model_prices(value) if value else {}


def price_for(spec: str, prices: Mapping[str, ModelPrice]) -> ModelPrice | None:
    """The price of ``spec``: an exact entry, else the longest matching pattern; scripted models are free."""
    if spec in prices:
        return prices[spec]
    matches = [p for p in prices if fnmatch.fnmatchcase(spec, p)]
    if matches:
        return prices[max(matches, key=len)]
    if any(fnmatch.fnmatchcase(spec, p) for p in FREE):
        return ModelPrice(input_per_mtok=0, output_per_mtok=0)
    return None


@dataclass(frozen=True)
class Refusal:
    """Why a call was refused: which budget, its limit and what was used."""

    budget: str  # a GatewayBudget field name
    limit: float
    used: float

    @property
    def message(self) -> str:
        if self.budget == "calls":  # a refused call was never counted: used == limit
            return f"call budget of {self.limit:g} exhausted"
        if self.budget == "cost_usd":
            return f"cost budget of ${self.limit:g} exhausted (${self.used:.4f} used)"
        if self.budget == "tokens":
            return f"token budget of {self.limit:g} exhausted ({self.used:g} used)"
        if self.budget == "wall_time_s":
            return f"wall-time budget of {self.limit:g}s exhausted ({self.used:.1f}s elapsed)"
        kind = self.budget.removesuffix("_tokens")
        return f"{kind}-token budget of {self.limit:g} exhausted ({self.used:g} used)"

    @property
    def code(self) -> str:
        """A machine-readable code: ``call_budget_exhausted``, ``output_token_budget_exhausted``, …"""
        names = {"calls": "call", "input_tokens": "input_token", "output_tokens": "output_token", "tokens": "token",
                 "cost_usd": "cost", "wall_time_s": "wall_time"}
        return f"{names[self.budget]}_budget_exhausted"


class BudgetMeter:
    """Running totals against a :class:`GatewayBudget`; thread-safe."""

    def __init__(self, budget: GatewayBudget, price: ModelPrice | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if budget.cost_usd is not None and price is None:
            raise ValueError("a cost budget needs the model's price (ModelPrice, or INTEGRITYLAB_MODEL_PRICES)")
        self.budget = budget
        self.price = price
        self._clock = clock
        self._lock = threading.Lock()
        self._started: float | None = None
        self._calls = 0
        self._input = 0
        self._output = 0
        self._cost = 0.0
        self._refused = 0
        self._exhausted: str | None = None

    def start(self) -> None:
        self._started = self._clock()

    def _elapsed(self) -> float:
        return 0.0 if self._started is None else self._clock() - self._started

    def _over(self) -> Refusal | None:
        b = self.budget
        checks: list[tuple[str, float | None, float]] = [
            ("calls", b.calls, self._calls),
            ("input_tokens", b.input_tokens, self._input),
            ("output_tokens", b.output_tokens, self._output),
            ("tokens", b.tokens, self._input + self._output),
            ("cost_usd", b.cost_usd, self._cost),
            ("wall_time_s", b.wall_time_s, self._elapsed()),
        ]
        for name, limit, used in checks:
            if limit is not None and used >= limit:
                return Refusal(name, limit, used)
        return None

    def admit(self) -> Refusal | None:
        """Reserve a call, or say which budget refuses it (and count the refusal)."""
        with self._lock:
            refusal = self._over()
            if refusal is None:
                self._calls += 1
            else:
                self._refused += 1
                self._exhausted = self._exhausted or refusal.budget
            return refusal

    def release(self) -> None:
        """Give back a reserved call that never reached the provider (e.g. a malformed body)."""
        with self._lock:
            self._calls -= 1

    def add(self, usage: Usage) -> None:
        """Count a reply's tokens (and their cost)."""
        with self._lock:
            self._input += usage.input_tokens
            self._output += usage.output_tokens
            if self.price is not None:
                self._cost += self.price.cost(usage)

    @property
    def calls(self) -> int:
        return self._calls

    @property
    def refused(self) -> int:
        return self._refused

    def usage(self) -> GatewayUsage:
        with self._lock:
            return GatewayUsage(calls=self._calls, input_tokens=self._input, output_tokens=self._output,
                                cost_usd=round(self._cost, 8) if self.price is not None else None,
                                refused=self._refused, wall_time_s=round(self._elapsed(), 3),
                                exhausted=self._exhausted)


__all__ = ["BudgetMeter", "GatewayBudget", "GatewayUsage", "ModelPrice", "Refusal", "model_prices_from_env",
           "parse_model_prices", "price_for"]
