"""Building judges that need outside resources (the LLM rubric panel) from configuration.

Judges do not import model clients (DESIGN.md §3); this module turns model specs
into the plain callables the panel takes.
"""

from __future__ import annotations

from agents.models.base import ChatMessage, ModelError, ModelRequest
from agents.models.registry import make_provider
from judges.panel import PanelMember, RubricPanelJudge


def panel_member(spec: str, max_tokens: int = 2000) -> PanelMember:
    provider = make_provider(spec)

    def ask(system: str, user: str) -> str:
        reply = provider.complete(ModelRequest(
            messages=[ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)],
            temperature=0.0, max_tokens=max_tokens,
        ))
        if not reply.content:
            raise ModelError(f"judge model {spec} returned no text", layer="model")
        return reply.content

    return PanelMember(name=spec, ask=ask)


def rubric_panel(specs: list[str]) -> RubricPanelJudge:
    """A panel over the given model specs, e.g. ``["openai:gpt-4.1", "openai:qwen3-32b"]``."""
    return RubricPanelJudge([panel_member(spec) for spec in specs])
