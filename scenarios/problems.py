"""Problems found in a pack, each located by file, field and line, and the error that carries them all.

Validation collects every problem before raising, so one run shows the whole list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict


class Problem(BaseModel):
    """One thing wrong with a pack, located precisely enough to jump to it."""

    model_config = ConfigDict(frozen=True)

    file: str
    field: str | None = None
    line: int | None = None
    message: str

    def __str__(self) -> str:
        head = self.file or "<scenarios>"
        if self.line is not None:
            head = f"{head}:{self.line}"
        parts = [head]
        if self.field:
            parts.append(self.field)
        parts.append(self.message)
        return ": ".join(parts)


class ScenarioError(Exception):
    """Raised with every problem found, so one run shows the whole list."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        super().__init__(_describe(self.problems))


def _describe(problems: Sequence[Problem]) -> str:
    if len(problems) == 1:
        return str(problems[0])
    lines = [f"{len(problems)} problems:"]
    lines.extend(f"  {problem}" for problem in problems)
    return "\n".join(lines)


class UnknownScenarioError(KeyError):
    """A ``KeyError`` whose text reads as a sentence rather than a quoted repr."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown scenario"


def sorted_problems(problems: Iterable[Problem]) -> list[Problem]:
    """Each problem once, by file and line, so the list reads top to bottom."""
    unique = dict.fromkeys(problems)
    return sorted(unique, key=lambda p: (p.file, p.line or 0, p.field or "", p.message))
