"""The scenario-selection options shared by ``run`` and ``submit``: repeats select all, or are refused.

Typer keeps only the last value of a repeated single-value option, so ``--category T01 --category T08``
used to select T08 alone, silently. Here every selection option is repeatable: several categories
select all of them, ``--role trap --role control`` selects both, and several families are refused
with an error that says how to mix them.
"""

from __future__ import annotations

from typing import Annotated

import typer

FamilyOpt = Annotated[list[str] | None, typer.Option("--family", help="dilemma | probe | mcq (once)")]
CategoryOpt = Annotated[list[str] | None, typer.Option("--category", help="e.g. T08 (repeatable: all are selected)")]
RoleOpt = Annotated[list[str] | None, typer.Option("--role", help="trap | control (repeatable)")]


class SelectionError(ValueError):
    """A selection option given in a way that cannot mean one thing."""


def one_family(values: list[str] | None) -> str | None:
    distinct = list(dict.fromkeys(values or []))
    if len(distinct) > 1:
        raise SelectionError(f"--family was given {len(distinct)} times ({', '.join(distinct)}); a batch selects one "
                             "family — list scenarios with --scenario, or submit one batch per family")
    return distinct[0] if distinct else None


def categories(values: list[str] | None) -> str | list[str] | None:
    distinct = list(dict.fromkeys(values or []))
    if not distinct:
        return None
    return distinct[0] if len(distinct) == 1 else distinct


def one_role(values: list[str] | None) -> str | None:
    """Both roles given is the same as no role filter; anything else than trap/control is refused."""
    distinct = {v.lower() for v in values or []}
    unknown = distinct - {"trap", "control"}
    if unknown:
        raise SelectionError(f"--role takes trap or control, got {', '.join(sorted(unknown))}")
    return distinct.pop() if len(distinct) == 1 else None
