"""Model providers by prefix: ``scripted:<policy>``, ``openai:<model>``, ``anthropic:<model>``, ``replay:<file>``,
``local:<name>``.

Adding a provider is one module that calls :func:`register_provider` with its
prefix and a factory taking the part after the colon.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from agents.models.base import ModelError, ModelProvider

Factory = Callable[[str], ModelProvider]

_FACTORIES: dict[str, Factory] = {}
_KNOWN_MODULES = {
    "scripted": "agents.scripted.provider",
    "openai": "agents.models.openai_compat",
    "anthropic": "agents.models.anthropic_provider",
    "replay": "agents.models.replay",
    "local": "agents.local.provider",
}


def register_provider(prefix: str) -> Callable[[Factory], Factory]:
    def decorate(factory: Factory) -> Factory:
        _FACTORIES[prefix] = factory
        return factory

    return decorate


def provider_prefixes() -> list[str]:
    return sorted(set(_FACTORIES) | set(_KNOWN_MODULES))


def parse_model_spec(spec: str) -> tuple[str, str]:
    prefix, sep, name = spec.partition(":")
    if not sep or not name:
        raise ModelError(
            f"model spec {spec!r} must look like PREFIX:NAME (prefixes: {', '.join(provider_prefixes())})",
            layer="orchestrator",
        )
    return prefix, name


def make_provider(spec: str) -> ModelProvider:
    prefix, name = parse_model_spec(spec)
    if prefix not in _FACTORIES and prefix in _KNOWN_MODULES:
        importlib.import_module(_KNOWN_MODULES[prefix])
    if prefix not in _FACTORIES:
        raise ModelError(
            f"unknown model provider {prefix!r} in {spec!r}; known: {', '.join(provider_prefixes())}",
            layer="orchestrator",
        )
    provider = _FACTORIES[prefix](name)
    provider.spec = spec
    return provider
