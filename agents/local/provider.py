"""``local:<name>``: an installed open-weight model behind a managed llama.cpp server.

The provider is the ordinary OpenAI-compatible one pointed at the server's
loopback URL, so the request, reply and error paths are the same as for any
hosted model. What it adds: the weights must be installed (else it fails at
once and names the command), the server is started on first use and shared,
our chat template is applied (see ``templates/``), and ``settings`` says how the
model was served so runs can record it.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path

from agents.local.catalog import get_model
from agents.local.server import shared_server
from agents.local.store import installed_path, models_dir
from agents.models.base import ModelError, ModelProvider, ModelRequest, ModelResponse
from agents.models.openai_compat import OpenAICompatProvider
from agents.models.registry import register_provider
from agents.models.sdk_common import PLACEHOLDER_API_KEY

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TIMEOUT_ENV = "INTEGRITYLAB_LOCAL_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 600.0  # generation fell to 0.5-5 tokens/s under load on two cores
MAX_TOKENS_ENV = "INTEGRITYLAB_LOCAL_MAX_TOKENS"
# a reply longer than this is a small model rambling (the 1.5B model once wrote 4,000+ tokens for its
# first step at ~7 tokens/s); a report fits well within it
DEFAULT_MAX_TOKENS = 1500


@cache
def template_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ModelError(f"{name} must be a positive number, got {raw!r}", layer="orchestrator")
    return value


def call_timeout() -> float:
    """Seconds one model call may take before the run ends in the ``model`` layer."""
    return _env_number(TIMEOUT_ENV, DEFAULT_TIMEOUT_S)


def reply_token_cap() -> int:
    """Most tokens one reply may have, unless the request sets its own limit."""
    return int(_env_number(MAX_TOKENS_ENV, DEFAULT_MAX_TOKENS))


class LocalProvider(OpenAICompatProvider):
    """A catalogued local model; ``settings`` records the server, weights and chat template used."""

    def __init__(self, name: str) -> None:
        try:
            model = get_model(name)
        except ValueError as exc:
            raise ModelError(str(exc), layer="orchestrator") from None
        weights = installed_path(name)
        if weights is None:
            raise ModelError(
                f"local model {name!r} is not installed in {models_dir()}: run `integritylab models install {name}`",
                layer="orchestrator",
            )
        template = TEMPLATE_DIR / model.template
        server = shared_server(weights, template, model.n_ctx, models_dir().parent / "logs")
        super().__init__(model=name, base_url=f"{server.url}/v1", api_key=PLACEHOLDER_API_KEY,
                         timeout=call_timeout(), max_retries=0)
        self.spec = f"local:{name}"
        self.server = server
        self.max_tokens = reply_token_cap()
        self.settings = {
            "server": "llama.cpp (xllamacpp)",
            "weights": f"{model.file_name} sha256:{model.sha256[:16]}",
            "chat_template": f"{model.template} sha256:{template_digest(template)}",
            "n_ctx": model.n_ctx,
            "threads": server.threads,
            "max_tokens": self.max_tokens,
        }

    def complete(self, request: ModelRequest) -> ModelResponse:
        if request.max_tokens is None:
            request = request.model_copy(update={"max_tokens": self.max_tokens})
        return super().complete(request)


@register_provider("local")
def make_local_provider(name: str) -> ModelProvider:
    return LocalProvider(name)
