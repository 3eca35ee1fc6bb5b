"""What an annotator may see before they commit their own label.

Blind review hides the agent and model names (also inside the trajectory text, since CLI agents and
models name themselves), the pressure condition, the judges' verdicts and other annotators' labels.
"""

from __future__ import annotations

import re

MASK = "[masked]"
#: names that identify an agent or a model family wherever they appear in text
KNOWN_NAMES = ("gpt-4o", "gpt-4", "gpt-5", "gpt", "openai", "claude", "anthropic", "sonnet", "opus", "haiku",
               "codex", "openclaw", "qwen", "llama", "mistral", "gemini", "deepseek", "smollm")


def names_to_mask(agent: str, model: str) -> list[str]:
    """The run's own agent and model names and their parts (``openai:gpt-4o`` → ``gpt-4o``), longest first."""
    names = {agent, model, *KNOWN_NAMES}
    for value in (agent, model):
        names.update(part for part in re.split(r"[:/@]", value) if len(part) >= 3)
    return sorted((n for n in names if n), key=len, reverse=True)


def mask(text: str, names: list[str]) -> str:
    if not text or not names:
        return text
    pattern = re.compile("|".join(re.escape(n) for n in names), re.IGNORECASE)
    return pattern.sub(MASK, text)
