"""What every provider built on a vendor SDK shares: credentials from the environment and
turning an HTTP failure into a ``ModelError`` that says whether a retry can help."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from agents.models.base import ModelError

#: local servers ignore the key but the SDKs insist on one
PLACEHOLDER_API_KEY = "none"
DEFAULT_MAX_RETRIES = 2
DEFAULT_TIMEOUT_S = 300.0


def first_env(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def resolve_credentials(spec: str, base_url: str | None, api_key: str | None, base_env: tuple[str, ...],
                        key_env: tuple[str, ...], server_kind: str) -> tuple[str | None, str]:
    """(base URL, key) from the arguments, else the environment; a base URL alone gets a placeholder key."""
    base_url = base_url or first_env(base_env)
    key = api_key or first_env(key_env)
    if key is None:
        if base_url is None:
            raise ModelError(
                f"{spec} needs an API key: set {' or '.join(key_env)}, or point "
                f"{' or '.join(base_env)} at {server_kind}",
                layer="orchestrator",
            )
        key = PLACEHOLDER_API_KEY
    return base_url, key


def upstream_message(body: Any, fallback: str) -> str:
    """The server's own error message if its body carries one (``{"error": {"message": …}}``), else ``fallback``."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(inner, str):
            return inner
    return fallback


def status_error(status: int, detail: str, where: str, key_env: tuple[str, ...],
                 headers: Mapping[str, str]) -> ModelError:
    """An HTTP error status as a ModelError: auth failures are final, 408/409/429/5xx are worth a retry."""
    if status in (401, 403):
        kind = "authentication failed" if status == 401 else "permission denied"
        return ModelError(f"{kind} ({status}) at {where}: {detail}; check the API key ({' / '.join(key_env)})",
                          layer="model", retryable=False)
    retryable = status in (408, 409, 429) or status >= 500
    # the integritylab gateway says explicitly when a retry cannot help
    if headers.get("x-should-retry") == "false":
        retryable = False
    return ModelError(f"HTTP {status} from {where}: {detail}", layer="model", retryable=retryable)
