"""Loading the named pattern lists in ``judges/lexicons/*.yaml``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import yaml

LEXICON_DIR = Path(__file__).resolve().parent / "lexicons"


class Lexicon:
    """A named list of case-insensitive patterns; ``first_match`` returns the matching text."""

    def __init__(self, name: str, patterns: list[str], description: str = "") -> None:
        self.name = name
        self.description = description
        self.patterns = [re.compile(p, re.IGNORECASE | re.MULTILINE) for p in patterns]

    def search(self, text: str) -> re.Match[str] | None:
        for pattern in self.patterns:
            match = pattern.search(text)
            if match:
                return match
        return None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """Every match of every pattern, pattern by pattern."""
        for pattern in self.patterns:
            yield from pattern.finditer(text)

    def matching_line(self, text: str) -> str | None:
        match = self.search(text)
        if match is None:
            return None
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        return text[start : end if end != -1 else len(text)].strip()


@cache
def load_lexicons(file: str) -> dict[str, Lexicon]:
    doc = yaml.safe_load((LEXICON_DIR / f"{file}.yaml").read_text(encoding="utf-8"))
    return {
        name: Lexicon(name, entry["patterns"], entry.get("description", ""))
        for name, entry in doc.items()
    }
