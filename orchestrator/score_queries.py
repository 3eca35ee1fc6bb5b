"""The scoreboard's inputs counted by the database, so a dashboard over 100,000 runs reads a few thousand
rows instead of loading every run.

The ``score_cells`` table (migration 0010) holds a :class:`~orchestrator.scoreboard.Cell` per batch and
distinct combination of what a score reads (agent, condition, family, category, role, scenario, verdict,
recognition, completion, failing layer) with its run count and tokens, kept up to date by triggers on
``runs`` as runs are added, finish or are re-judged; a query sums its rows over batches.
orchestrator/scoreboard.py computes every rate and interval from those exactly as from loaded runs. Median
runtimes come from ``percentile_cont`` over the runs on PostgreSQL; SQLite has no such aggregate, so there
the durations of the selected runs are read (the embedded default holds few runs).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import median
from typing import Any, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from orchestrator.db.models import JudgementRow, Run, ScoreCellRow
from orchestrator.scoreboard import Cell, group_key

C = ScoreCellRow
FACTS = (C.agent, C.model, C.condition, C.family, C.category, C.role, C.scenario_id, C.verdict,
         C.pathology_recognised, C.completed, C.error_layer)


Query = TypeVar("Query", bound=Select)  # type: ignore[type-arg]


def _filtered(query: Query, batch: str = "", family: str = "", condition: str = "",
              exclude_family: str = "", table: type[Run | ScoreCellRow] = Run) -> Query:
    if batch:
        query = query.where(table.batch_id == batch)
    if family:
        query = query.where(table.family == family)
    if condition:
        query = query.where(table.condition == condition)
    if exclude_family:
        query = query.where(table.family != exclude_family)
    return query


def cells(session: Session, batch: str = "", family: str = "", condition: str = "",
          exclude_family: str = "") -> list[Cell]:
    """The selected runs as cells: the chosen batches' rows of ``score_cells``, summed over batches here
    rather than by a GROUP BY (sorting ten thousand rows on eleven text columns took the database longer
    than reading them)."""
    query = _filtered(select(*FACTS, C.runs, C.input_tokens, C.output_tokens), batch, family, condition,
                      exclude_family, table=C)
    summed: dict[tuple[Any, ...], list[int]] = {}
    for row in session.execute(query):
        seen = summed.setdefault(row[:11], [0, 0, 0])
        seen[0] += row[11]
        seen[1] += row[12]
        seen[2] += row[13]
    return [Cell(f"{agent}/{model}", condition_, family_, category, role, scenario, verdict, recognised, completed,
                 layer, count=n, input_tokens=tokens_in, output_tokens=tokens_out)
            for (agent, model, condition_, family_, category, role, scenario, verdict, recognised, completed, layer),
            (n, tokens_in, tokens_out) in summed.items() if n > 0]


def judged_means(session: Session, batch: str = "", family: str = "", condition: str = ""
                 ) -> dict[tuple[str, str], dict[str, float]]:
    """Per agent × condition, from the current judgements: the mean EDI of scored probe runs and the mean
    Q1, Q2 and Q3 of mcq trap runs (the parts of IntegrityBench's IS)."""
    query = _filtered(select(Run.agent, Run.model, Run.condition, Run.family, JudgementRow.details).join(
        JudgementRow, JudgementRow.run_id == Run.id).where(
        JudgementRow.is_current, Run.family.in_(("probe", "mcq")), Run.role == "trap"), batch, family, condition)
    seen: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for agent, model, condition_, family_, details in session.execute(query):
        parts = ("edi",) if family_ == "probe" else ("q1", "q2", "q3")
        for part in parts:
            value = (details or {}).get(part)
            if isinstance(value, int | float):
                seen[(f"{agent}/{model}", condition_)][part].append(float(value))
    return {key: {part: round(sum(v) / len(v), 4) for part, v in parts.items()} for key, parts in seen.items()}


def medians(session: Session, by: Sequence[str], batch: str = "", family: str = "", condition: str = "",
            exclude_family: str = "") -> dict[tuple[str, str, str, str], float]:
    """Median runtime per score row (the grouping ``by`` of rows_from_cells)."""
    keys = [Run.agent, Run.model, Run.condition]
    keys += [Run.family] if "family" in by else []
    keys += [Run.category] if "category" in by else []
    timed = Run.duration_s.is_not(None)

    def key_of(row: Sequence[Any]) -> tuple[str, str, str, str]:
        named = dict(zip([c.key for c in keys], row, strict=False))
        return group_key(f"{named['agent']}/{named['model']}", named["condition"], named.get("family", "all"),
                         named.get("category", "all"), by)

    if session.get_bind().dialect.name == "postgresql":
        query = select(*keys, func.percentile_cont(0.5).within_group(Run.duration_s)).where(timed).group_by(*keys)
        return {key_of(row): float(row[-1]) for row in session.execute(
            _filtered(query, batch, family, condition, exclude_family))}
    durations: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    query = select(*keys, Run.duration_s).where(timed)
    for row in session.execute(_filtered(query, batch, family, condition, exclude_family)):
        durations[key_of(row)].append(float(row[-1]))
    return {key: median(values) for key, values in durations.items()}


def agent_names(session: Session, batch: str = "", family: str = "", condition: str = "") -> list[str]:
    """The agents (kind/model) of the selected runs, as agent_name() spells them."""
    query = _filtered(select(C.agent, C.model).distinct(), batch, family, condition, table=C)
    return [f"{agent}/{model}" for agent, model in session.execute(query)]


def filter_choices(session: Session) -> dict[str, list[str]]:
    """The dashboards' filter choices (batches, families, conditions that have runs)."""
    seen: dict[str, set[str]] = {"batch": set(), "family": set(), "condition": set()}
    for batch, family, condition in session.execute(select(C.batch_id, C.family, C.condition).distinct()):
        for name, value in (("batch", batch), ("family", family), ("condition", condition)):
            if value:
                seen[name].add(value)
    return {name: sorted(values) for name, values in seen.items()}
