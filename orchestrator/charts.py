"""Vega-Lite specs built in Python, as plain data: the pages embed them as JSON for the vendored
vega-embed, and tests read them without a browser. No chart knows about HTTP or the database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"  # an identifier: vega-embed does not fetch it

Spec = dict[str, Any]


class RatePoint(BaseModel):
    """One agent × condition's rate and its interval, on the overview's chart."""

    label: str
    condition: str
    estimate: float
    low: float
    high: float
    n: int


class HeatCell(BaseModel):
    agent: str
    category: str
    rate: float
    low: float
    high: float
    n: int
    href: str


def resistance_points(rows: Sequence[Any]) -> list[RatePoint]:
    """The overview's chart rows: each scoreboard row (agent · condition) with a resistance rate."""
    return [RatePoint(label=f"{r.agent} · {r.condition}", condition=r.condition, n=r.resistance.n,
                      estimate=r.resistance.estimate, low=r.resistance.low, high=r.resistance.high)
            for r in rows if r.resistance]


def heat_cells(rows: Sequence[Any], label: Any = lambda r: r.agent, href: Any = lambda r: "") -> list[HeatCell]:
    """Failure rate (1 − resistance) per scoreboard row grouped by agent and category; one line per agent and
    condition when the rows hold several conditions, so no two cells are drawn over each other."""
    several = len({r.condition for r in rows}) > 1
    return [HeatCell(agent=f"{label(r)} · {r.condition}" if several else label(r), category=r.category,
                     n=r.resistance.n, rate=1 - r.resistance.estimate, low=1 - r.resistance.high,
                     high=1 - r.resistance.low, href=href(r))
            for r in rows if r.resistance is not None]


def interval_chart(points: Sequence[RatePoint], title: str, axis: str) -> Spec:
    """Each row's estimate as a dot and its 95% interval as a bar: overlapping bars cannot be told apart."""
    values = [p.model_dump() for p in points]
    y = {"field": "label", "type": "nominal", "title": None, "sort": None, "axis": {"labelLimit": 360}}
    return {
        "$schema": SCHEMA, "title": title, "width": 420, "height": {"step": 26},
        "data": {"values": values},
        "encoding": {"y": y, "color": {"field": "condition", "type": "nominal", "title": "condition"}},
        "layer": [
            {"mark": {"type": "rule", "strokeWidth": 2},
             "encoding": {"x": {"field": "low", "type": "quantitative", "scale": {"domain": [0, 1]}, "title": axis},
                          "x2": {"field": "high"}}},
            {"mark": {"type": "point", "filled": True, "size": 70},
             "encoding": {"x": {"field": "estimate", "type": "quantitative"},
                          "tooltip": [{"field": "label"}, {"field": "condition"},
                                      {"field": "estimate", "format": ".2f"}, {"field": "low", "format": ".2f"},
                                      {"field": "high", "format": ".2f"}, {"field": "n", "title": "runs"}]}},
        ],
    }


def heatmap(cells: Sequence[HeatCell], title: str) -> Spec:
    """Agent × category failure rate; a cell is a link to its runs (Vega-Lite's ``href`` channel)."""
    return {
        "$schema": SCHEMA, "title": title, "data": {"values": [c.model_dump() for c in cells]},
        "width": {"step": 46}, "height": {"step": 30},
        "encoding": {
            "x": {"field": "category", "type": "ordinal", "title": "category", "sort": "ascending"},
            "y": {"field": "agent", "type": "nominal", "title": None},
            "href": {"field": "href"},  # on both layers: a click on the count opens the cell too
        },
        "layer": [
            {"mark": {"type": "rect", "cursor": "pointer"},
             "encoding": {
                 "color": {"field": "rate", "type": "quantitative", "title": "failure rate",
                           "scale": {"domain": [0, 1], "scheme": "orangered"}},
                 "tooltip": [{"field": "agent"}, {"field": "category"}, {"field": "rate", "format": ".2f"},
                             {"field": "low", "format": ".2f"}, {"field": "high", "format": ".2f"},
                             {"field": "n", "title": "runs"}]}},
            {"mark": {"type": "text", "fontSize": 11, "cursor": "pointer"},
             "encoding": {"text": {"field": "n", "type": "quantitative"},
                          "color": {"condition": {"test": "datum.rate > 0.6", "value": "white"}, "value": "black"}}},
        ],
    }


class ForestRow(BaseModel):
    label: str
    difference: float
    low: float
    high: float
    q_value: float
    significant: bool
    pairs: int


def forest(rows: Sequence[ForestRow], title: str) -> Spec:
    """Paired differences with their 95% intervals, one line per test, a rule at zero; filled where the
    Benjamini–Hochberg q is below 0.05."""
    y = {"field": "label", "type": "nominal", "title": None, "sort": None, "axis": {"labelLimit": 360}}
    x_title = "difference in integrity-problem rate (condition − baseline)"
    return {
        "$schema": SCHEMA, "title": title, "width": 420, "height": {"step": 24},
        "data": {"values": [r.model_dump() for r in rows]},
        "layer": [
            {"mark": {"type": "rule", "strokeWidth": 2},
             "encoding": {"y": y, "x": {"field": "low", "type": "quantitative", "scale": {"domain": [-1, 1]},
                                        "title": x_title}, "x2": {"field": "high"}}},
            {"mark": {"type": "point", "size": 70, "filled": True},
             "encoding": {"y": y, "x": {"field": "difference", "type": "quantitative"},
                          "opacity": {"condition": {"test": "datum.significant", "value": 1}, "value": 0.35},
                          "tooltip": [{"field": "label"}, {"field": "difference", "format": "+.2f"},
                                      {"field": "low", "format": "+.2f"}, {"field": "high", "format": "+.2f"},
                                      {"field": "q_value", "title": "BH q", "format": ".3f"},
                                      {"field": "pairs"}]}},
            {"mark": {"type": "rule", "strokeDash": [4, 4], "color": "grey"},
             "data": {"values": [{"zero": 0}]}, "encoding": {"x": {"field": "zero", "type": "quantitative"}}},
        ],
    }
