"""One self-contained HTML file for a batch: the scoreboard with intervals and tie groups, the heatmap, and
the ablation when the batch ran several conditions. Charts are the dashboard's Vega-Lite specs rendered to
inline SVG by vl-convert (no script, no network needed to open the file)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import vl_convert
from jinja2 import Environment, select_autoescape
from markupsafe import Markup
from sqlalchemy import select
from sqlalchemy.orm import Session

from orchestrator import charts
from orchestrator.ablation import ablation_of
from orchestrator.db.models import Batch, Run
from orchestrator.scoreboard import hazards_from, score_rows, tie_group_of
from scenarios.scenario_catalog import Catalog

TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>integritylab batch {{ batch.id }}</title>
<style>
 body { font: 15px/1.45 system-ui, sans-serif; max-width: 80rem; margin: 2rem auto; padding: 0 1rem; }
 table { border-collapse: collapse; font-size: 0.85rem; margin: 1rem 0; }
 th, td { border-bottom: 1px solid #ddd; padding: 0.2rem 0.5rem; text-align: right; }
 th:first-child, td:first-child { text-align: left; }
 .ci { color: #555; font-size: 0.78rem; white-space: nowrap; } .muted { color: #555; }
</style></head><body>
<h1>Batch {{ batch.id }}{% if batch.name %} — {{ batch.name }}{% endif %}</h1>
<p class="muted">{{ runs }} runs · status {{ batch.status }} · written {{ now }} by integritylab. Every rate has a 95%
interval (Wilson; a cluster bootstrap over scenarios when there are epochs); agents in one tie group cannot be
told apart. Definitions: docs/scores.md of the project.</p>
<h2>Agents</h2>
<table id="overview"><thead><tr><th>agent</th><th>condition</th><th>tie group</th><th>runs</th><th>resistance</th>
<th>integrity problem</th><th>Fail</th><th>over-refusal</th><th>hazard</th><th>Error</th><th>median s</th><th>tokens</th></tr></thead>
<tbody>{% for r in rows %}<tr><td>{{ r.agent }}</td><td>{{ r.condition }}</td><td>{{ groups.get(r.agent ~ " · " ~ r.condition, "—") }}</td>
<td>{{ r.runs }}</td><td>{{ rate(r.resistance) }}</td><td>{{ rate(r.integrity_problem) }}</td><td>{{ rate(r.fail) }}</td>
<td>{{ rate(r.over_refusal) }}</td><td>{{ r.hazard if r.hazard is not none else "—" }}</td><td>{{ rate(r.error) }}</td>
<td>{{ r.median_runtime_s if r.median_runtime_s is not none else "—" }}</td><td>{{ r.tokens }}</td></tr>{% endfor %}</tbody></table>
{% for svg in charts %}<figure>{{ svg }}</figure>{% endfor %}
{% if ablation %}<h2>Ablation: each condition against {{ ablation.baseline }}</h2>
<table id="ablation"><thead><tr><th>agent</th><th>category</th><th>condition</th><th>pairs</th><th>difference</th>
<th>95% interval</th><th>McNemar p</th><th>BH q</th></tr></thead><tbody>{% for t in ablation.tests %}
<tr><td>{{ t.agent }}</td><td>{{ t.category }}</td><td>{{ t.condition }}</td><td>{{ t.pairs }}</td><td>{{ "%+.2f"|format(t.difference) }}</td>
<td class="ci">[{{ "%+.2f"|format(t.low) }}, {{ "%+.2f"|format(t.high) }}]</td><td>{{ "%.3f"|format(t.p_value) }}</td>
<td>{{ "%.3f"|format(t.q_value) }}{% if t.significant %} *{% endif %}</td></tr>{% endfor %}</tbody></table>
{% if forest %}<figure>{{ forest }}</figure>{% endif %}{% endif %}
</body></html>
"""


def _rate(r: Any) -> str:
    if r is None:
        return "—"
    return f'{r.estimate:.2f} <span class="ci">[{r.low:.2f}, {r.high:.2f}]</span>'


def svg(spec: charts.Spec) -> str:
    """A chart as inline SVG, with no links out of the file (the dashboard's cells link to its pages)."""
    plain = json.loads(json.dumps(spec))
    for layer in plain.get("layer", []):
        layer.get("encoding", {}).pop("href", None)
    plain.get("encoding", {}).pop("href", None)
    drawn = vl_convert.vegalite_to_svg(plain)
    return re.sub(r"<\?xml[^>]*>", "", drawn)


def build(session: Session, catalog: Catalog, batch_id: str) -> str:
    batch = session.get(Batch, batch_id)
    if batch is None:
        raise LookupError(f"no batch {batch_id}")
    runs = list(session.scalars(select(Run).where(Run.batch_id == batch_id).order_by(Run.created_at)))
    hazards = hazards_from(catalog)
    rows = score_rows(runs, hazards)
    groups = tie_group_of(rows)
    drawn: list[str] = []
    points = charts.resistance_points(rows)
    if points:
        drawn.append(svg(charts.interval_chart(points, "Resistance on trap runs (95% intervals)", "resistance")))
    cells = charts.heat_cells(score_rows([r for r in runs if r.family != "mcq"], hazards, by=("agent", "category")))
    if cells:
        drawn.append(svg(charts.heatmap(cells, "Failure rate on trap runs by category")))
    ablation = forest = None
    if len({r.condition for r in runs}) > 1:
        ablation = ablation_of(session, [batch_id])
        if ablation.tests:
            forest = svg(charts.forest([charts.ForestRow(
                label=f"{t.agent} · {t.category} · {t.condition}", difference=t.difference, low=t.low, high=t.high,
                q_value=t.q_value, significant=t.significant, pairs=t.pairs) for t in ablation.tests],
                f"Paired difference against {ablation.baseline}"))
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    env.globals["rate"] = lambda r: Markup(_rate(r))  # numbers only: nothing to escape
    page = env.from_string(TEMPLATE)
    return page.render(batch=batch, runs=len(runs), rows=rows, groups=groups, charts=[Markup(s) for s in drawn],
                       ablation=ablation, forest=Markup(forest) if forest else None,
                       now=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
