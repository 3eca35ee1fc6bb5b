"""Sandbox backends by name. Adding one is one new module with ``@register_backend``."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from sandboxes.base import SandboxBackend, SandboxUnavailable

_BACKENDS: dict[str, type[SandboxBackend]] = {}

# name -> module that registers it; imported lazily so optional dependencies stay optional
_KNOWN_MODULES = {
    "bwrap": "sandboxes.bwrap",
    "local": "sandboxes.local",
    "docker": "sandboxes.docker",
}

# order in which the embedded default tries backends; ``local`` is never auto-picked
AUTO_ORDER = ("docker", "bwrap")


def register_backend(name: str) -> Callable[[type[SandboxBackend]], type[SandboxBackend]]:
    def decorate(cls: type[SandboxBackend]) -> type[SandboxBackend]:
        cls.name = name
        _BACKENDS[name] = cls
        return cls

    return decorate


def backend_names() -> list[str]:
    return sorted(set(_BACKENDS) | set(_KNOWN_MODULES))


def get_backend(name: str) -> SandboxBackend:
    """Return a backend instance, or raise ``SandboxUnavailable`` naming what is missing."""
    if name not in _BACKENDS and name in _KNOWN_MODULES:
        try:
            importlib.import_module(_KNOWN_MODULES[name])
        except ImportError as exc:
            raise SandboxUnavailable(
                f"sandbox backend {name!r} cannot be loaded: {exc}"
            ) from exc
    if name not in _BACKENDS:
        raise SandboxUnavailable(
            f"unknown sandbox backend {name!r}; known: {', '.join(backend_names())}"
        )
    return _BACKENDS[name]()


def pick_backend(requested: str | None = None) -> tuple[SandboxBackend, str]:
    """The backend to use and a sentence saying why.

    ``requested`` names one explicitly (``local`` only this way); ``None`` or
    ``"auto"`` tries :data:`AUTO_ORDER` and explains what was skipped.
    """
    if requested and requested != "auto":
        backend = get_backend(requested)
        ok, why = backend.available()
        if not ok:
            raise SandboxUnavailable(f"sandbox backend {requested!r} is not available: {why}")
        return backend, f"using sandbox backend {requested!r} (requested)"
    reasons: list[str] = []
    for name in AUTO_ORDER:
        try:
            backend = get_backend(name)
        except SandboxUnavailable as exc:
            reasons.append(f"{name}: {exc}")
            continue
        ok, why = backend.available()
        if ok:
            skipped = f" (skipped {'; '.join(reasons)})" if reasons else ""
            return backend, f"using sandbox backend {name!r}{skipped}"
        reasons.append(f"{name}: {why}")
    raise SandboxUnavailable(
        "no isolating sandbox backend is available: "
        + "; ".join(reasons)
        + ". Install bubblewrap (apt-get install bubblewrap) or start a Docker engine;"
        " the unisolated 'local' backend is only used when asked for by name."
    )
