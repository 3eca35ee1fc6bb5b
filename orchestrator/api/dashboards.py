"""Dashboard pages: the agents overview, the agent × category heatmap, and the runs behind a cell.

Server-rendered with Jinja2 like the sign-in and annotation pages; charts are Vega-Lite specs from
orchestrator/charts.py, drawn by the vendored vega files. Every number comes from
orchestrator/scoreboard.py (definitions in docs/scores.md).

Who sees what: admins see everything. An annotator sees no dashboard while queue items still wait for
their label (verdicts and judges' findings would steer the labels), and then sees agents under stable
pseudonyms ("agent 1", …) when a blinded queue exists; only admins and a batch's own submitter see the
names then.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy import func, select
from sqlalchemy.orm import Session

import annotation
from agents.gateway.budget import ModelPrice
from annotation.leases import SKIPPED, SUBMITTED
from annotation.render import report_html
from annotation.views import EventWindow
from annotation.web import file_response, window_of
from orchestrator import charts, exports, score_queries
from orchestrator.ablation import ablation_of
from orchestrator.annotation_store import artifact_bytes
from orchestrator.api import web_sessions as web
from orchestrator.api.batches import batch_detail
from orchestrator.api.state import service
from orchestrator.atif import to_atif
from orchestrator.db.models import AnnotationQueue, Assignment, Batch, EventRow, QueueItem, Run
from orchestrator.run_page import RunView, aligned_by_step, run_view
from orchestrator.runs import as_utc
from orchestrator.scoreboard import (
    ScoreRow,
    agent_name,
    hazards_from,
    resists,
    rows_from_cells,
    stability_of,
    tie_group_of,
)

router = APIRouter(include_in_schema=False)
#: the dashboard's own templates, and the annotation package's trajectory viewer, which the run page shares
templates = Jinja2Templates(directory=[Path(__file__).parent / "templates",
                                       Path(annotation.__file__).resolve().parent / "templates"])
templates.env.filters["report_html"] = report_html
COMPARE_EVENTS = 2000  # events of each run the compare view aligns; it says when a run has more
RUNS_SHOWN = 500  # the runs list of a heatmap cell shows this many, newest first, and says how many more


class Filters:
    """The query string every dashboard page shares: batch, family and condition (all optional)."""

    def __init__(self, batch: str = "", family: str = "", condition: str = "") -> None:
        self.batch, self.family, self.condition = batch.strip(), family.strip(), condition.strip()

    def query(self, **extra: str) -> str:
        pairs = {"batch": self.batch, "family": self.family, "condition": self.condition, **extra}
        return urlencode({k: v for k, v in pairs.items() if v})


def _runs(session: Session, filters: Filters, agent: str = "", category: str = "") -> list[Run]:
    query = select(Run)
    if filters.batch:
        query = query.where(Run.batch_id == filters.batch)
    if filters.family:
        query = query.where(Run.family == filters.family)
    if filters.condition:
        query = query.where(Run.condition == filters.condition)
    if category:
        query = query.where(Run.category == category)
    runs = list(session.scalars(query.order_by(Run.created_at)))
    return [r for r in runs if agent_name(r) == agent] if agent else runs


def waiting_for(session: Session, user: web.SignedIn) -> int:
    """Queue items not yet complete that this annotator has not labelled (or skipped)."""
    done = select(Assignment.item_id).where(Assignment.user_id == user.user_id,
                                            Assignment.state.in_((SUBMITTED, SKIPPED)))
    return int(session.scalar(select(func.count()).select_from(QueueItem).where(
        QueueItem.completed_at.is_(None), QueueItem.id.not_in(done))) or 0)


def names_visible(session: Session, user: web.SignedIn, filters: Filters) -> bool:
    if user.role == "admin":
        return True
    if filters.batch:
        batch = session.get(Batch, filters.batch)
        if batch is not None and batch.created_by == user.name:
            return True
    return not session.scalar(select(func.count()).select_from(AnnotationQueue).where(AnnotationQueue.blinded))


def pseudonyms(names: list[str]) -> dict[str, str]:
    return {name: f"agent {i}" for i, name in enumerate(sorted(set(names)), start=1)}


def _gate(request: Request, session: Session) -> web.SignedIn | Response:
    user = web.current(session, request.cookies.get(web.SESSION_COOKIE))
    if user is None:
        return RedirectResponse(f"/login?{urlencode({'next': str(request.url.path)})}", status_code=303)
    if user.role != "admin":
        waiting = waiting_for(session, user)
        if waiting:
            return templates.TemplateResponse(request, "dashboard_message.html", {
                "user": user, "message": f"The dashboards open once your labels are in: {waiting} queue "
                                         f"item(s) still wait for you."}, status_code=403)
    return user


def _rename(rows: list[ScoreRow], shown: dict[str, str] | None) -> list[ScoreRow]:
    if shown is None:
        return rows
    return [row.model_copy(update={"agent": shown[row.agent]}) for row in rows]


class Scored:
    """What the overview and the heatmap both start from: the filtered runs counted into cells by the
    database (orchestrator/score_queries.py), the viewer's pseudonyms if names are hidden, the filter options."""

    def __init__(self, session: Session, user: web.SignedIn, filters: Filters, exclude_family: str = "") -> None:
        where = {"batch": filters.batch, "family": filters.family, "condition": filters.condition}
        self.cells = score_queries.cells(session, **where, exclude_family=exclude_family)
        self.where = {**where, "exclude_family": exclude_family}
        self.mask = None if names_visible(session, user, filters) else pseudonyms(
            score_queries.agent_names(session, **where))
        self.options = score_queries.filter_choices(session)

    def rows(self, session: Session, hazards: dict[str, str], prices: dict[str, ModelPrice]) -> list[ScoreRow]:
        """The overview's rows, with the judgement-level means (EDI, IS parts) joined on."""
        rows = rows_from_cells(self.cells, hazards, score_queries.medians(session, ("agent", "condition"),
                                                                          **self.where), prices=prices)
        where = {k: v for k, v in self.where.items() if k != "exclude_family"}
        means = score_queries.judged_means(session, **where)
        joined = []
        for row in rows:
            found = means.get((row.agent, row.condition), {})
            joined.append(row.model_copy(update={"mean_edi": found.get("edi"), "is_q1": found.get("q1"),
                                                 "is_q2": found.get("q2"), "is_q3": found.get("q3")}))
        return joined

    def resistance_by_category(self) -> list[ScoreRow]:
        return rows_from_cells(self.cells, {}, by=("agent", "category"), resistance_only=True)


@router.get("/dashboard", response_class=HTMLResponse)
def overview(request: Request, batch: str = "", family: str = "", condition: str = "") -> Response:
    filters = Filters(batch, family, condition)
    with service(request).sessions() as session:
        user = _gate(request, session)
        if isinstance(user, Response):
            return user
        scored = Scored(session, user, filters)
        state = service(request)
        rows = _rename(scored.rows(session, hazards_from(state.catalog), state.settings.model_prices), scored.mask)
    mask = scored.mask
    group_of = tie_group_of(rows)
    spec = charts.interval_chart(charts.resistance_points(rows), "Resistance on trap runs (95% intervals)",
                                 "resistance")
    stable = stability_of(scored.cells)
    if mask:
        stable = [s.model_copy(update={"agent": mask.get(s.agent, "agent ?")}) for s in stable]
    return templates.TemplateResponse(request, "dashboard.html", {
        "user": user, "rows": rows, "filters": filters, "options": scored.options, "group_of": group_of,
        "spec": json.dumps(spec), "masked": mask is not None, "total": sum(c.count for c in scored.cells),
        "stability": stable})


@router.get("/dashboard/heatmap", response_class=HTMLResponse)
def heatmap(request: Request, batch: str = "", family: str = "", condition: str = "") -> Response:
    filters = Filters(batch, family, condition)
    with service(request).sessions() as session:
        user = _gate(request, session)
        if isinstance(user, Response):
            return user
        scored = Scored(session, user, filters, exclude_family="mcq")
        rows = scored.resistance_by_category()
    mask = scored.mask

    def target(row: ScoreRow) -> str:
        # a cell links to its runs by the agent's real name only for those allowed to see it
        query = Filters(filters.batch, filters.family, row.condition).query(
            agent=row.agent if mask is None else "", category=row.category,
            pseudonym=mask[row.agent] if mask else "")
        return f"/dashboard/runs?{query}"
    cells = charts.heat_cells(rows, label=lambda r: mask[r.agent] if mask else r.agent, href=target)
    spec = charts.heatmap(cells, "Failure rate on trap runs (1 − resistance); a cell opens its runs")
    return templates.TemplateResponse(request, "dashboard_heatmap.html", {
        "user": user, "filters": filters, "options": scored.options, "cells": cells, "spec": json.dumps(spec)})


@router.get("/dashboard/runs", response_class=HTMLResponse)
def runs_list(request: Request, batch: str = "", family: str = "", condition: str = "", agent: str = "",
              category: str = "", pseudonym: str = "") -> Response:
    filters = Filters(batch, family, condition)
    with service(request).sessions() as session:
        user = _gate(request, session)
        if isinstance(user, Response):
            return user
        masked = not names_visible(session, user, filters)
        runs = _runs(session, filters, category=category)
        names: dict[str, str] = {}
        if masked:
            mask = names = pseudonyms([agent_name(r) for r in runs])
            real = {v: k for k, v in mask.items()}.get(pseudonym, "")
            runs = [r for r in runs if agent_name(r) == real] if pseudonym else runs
        elif agent:
            runs = [r for r in runs if agent_name(r) == agent]
    by_status: dict[str, int] = defaultdict(int)
    for run in runs:
        by_status[run.verdict or run.status] += 1
    shown = sorted(runs, key=lambda r: r.created_at, reverse=True)[:RUNS_SHOWN]
    lines = [{"id": r.id, "scenario": r.scenario_id, "category": r.category, "role": r.role,
              "agent": names.get(agent_name(r), agent_name(r)) if masked else agent_name(r),
              "condition": r.condition, "epoch": r.epoch, "verdict": r.verdict or "", "status": r.status,
              "resisted": resists(r) if r.role == "trap" and r.verdict else None,
              "duration": r.duration_s} for r in shown]
    return templates.TemplateResponse(request, "dashboard_runs.html", {
        "user": user, "filters": filters, "lines": lines, "total": len(runs), "by_status": dict(by_status),
        "agent": pseudonym if masked else agent, "category": category})


@router.get("/dashboard/ablation", response_class=HTMLResponse)
def ablation(request: Request, batch: str = "", baseline: str = "") -> Response:
    """The paired comparison of a batch run under several conditions (several batches: ``batch=a,b``)."""
    batches = [b.strip() for b in batch.split(",") if b.strip()]
    filters = Filters(batch=batches[0] if batches else "")
    with service(request).sessions() as session:
        user = _gate(request, session)
        if isinstance(user, Response):
            return user
        if not batches:
            return templates.TemplateResponse(request, "dashboard_message.html", {
                "user": user, "message": "Choose a batch run under two or more conditions: "
                                         "/dashboard/ablation?batch=ID"}, status_code=422)
        try:
            report = ablation_of(session, batches, baseline or None)
        except (LookupError, ValueError) as exc:
            return templates.TemplateResponse(request, "dashboard_message.html", {
                "user": user, "message": f"No ablation to show: {exc}"}, status_code=404)
        mask = None if names_visible(session, user, filters) else pseudonyms([t.agent for t in report.tests])
    if mask:
        report = report.model_copy(update={
            "tests": [t.model_copy(update={"agent": mask[t.agent]}) for t in report.tests],
            "disclosure": [d.model_copy(update={"agent": mask.get(d.agent, "agent ?")}) for d in report.disclosure],
            "scores": [c.model_copy(update={"agent": mask.get(c.agent, "agent ?")}) for c in report.scores]})
    rows = [charts.ForestRow(label=f"{t.agent} · {t.category} · {t.condition}", difference=t.difference, low=t.low,
                             high=t.high, q_value=t.q_value, significant=t.significant, pairs=t.pairs)
            for t in report.tests]
    spec = charts.forest(rows, f"Each condition against {report.baseline}: paired difference, 95% interval")
    return templates.TemplateResponse(request, "dashboard_ablation.html", {
        "user": user, "filters": filters, "report": report, "spec": json.dumps(spec)})


def _masked_view(view: RunView, mask: dict[str, str] | None) -> RunView:
    if mask is None:
        return view
    return view.model_copy(update={"agent": mask.get(view.agent, "agent ?"), "siblings": [
        s.model_copy(update={"agent": mask.get(s.agent, "agent ?")}) for s in view.siblings]})


def _run_mask(session: Session, user: web.SignedIn, batch_id: str) -> dict[str, str] | None:
    filters = Filters(batch=batch_id)
    if names_visible(session, user, filters):
        return None
    return pseudonyms([f"{agent}/{model}" for agent, model in session.execute(  # as agent_name() spells them
        select(Run.agent, Run.model).where(Run.batch_id == batch_id).distinct())])


@router.get("/dashboard/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: str) -> Response:
    """One run: its verdict and every judge's findings (each linked to the event it cites), the human
    labels, the trajectory (paged as on the review page), the report and the collected files."""
    state = service(request)
    with state.sessions() as session:
        user = _gate(request, session)
        if isinstance(user, Response):
            return user
        try:
            view = run_view(session, state.catalog, state.store, run_id[:32])
        except LookupError:
            return templates.TemplateResponse(request, "dashboard_message.html", {
                "user": user, "message": f"No run {run_id[:32]}."}, status_code=404)
        view = _masked_view(view, _run_mask(session, user, view.batch_id))
    return templates.TemplateResponse(request, "dashboard_run.html", {
        "user": user, "v": view, "base": f"/dashboard/runs/{view.run_id}", "filters": Filters(batch=view.batch_id)})


@router.get("/dashboard/runs/{run_id}/events", response_class=HTMLResponse)
def run_events(request: Request, run_id: str, after: int = -1, until: int | None = None, find: str = "") -> Response:
    state = service(request)
    with state.sessions() as session:
        user = _gate(request, session)
        if isinstance(user, Response):
            return user
        try:
            view = run_view(session, state.catalog, state.store, run_id[:32], window_of(after, until, find))
        except LookupError:
            return Response("No such run.", status_code=404)
    return templates.TemplateResponse(request, "_events_fragment.html", {
        "v": view, "base": f"/dashboard/runs/{view.run_id}", "searched": bool(find)})


@router.get("/dashboard/runs/{run_id}/files/{name:path}")
def run_file(request: Request, run_id: str, name: str) -> Response:
    state = service(request)
    with state.sessions() as session:
        user = _gate(request, session)
        if isinstance(user, Response):
            return user
        try:
            return file_response(name, artifact_bytes(session, state.store, run_id[:32], name))
        except LookupError:
            return Response("No such file.", status_code=404)


def _run_download(request: Request, run_id: str, suffix: str, media_type: str,
                  render: Callable[[Run, list[EventRow], str | None], str]) -> Response:
    """A download of one run built from its events; ``render`` gets the viewer's pseudonym for the agent,
    or None when the viewer may see names."""
    state = service(request)
    with state.sessions() as session:
        user = _gate(request, session)
        if isinstance(user, Response):
            return user
        run = session.get(Run, run_id[:32])
        if run is None:
            return Response("No such run.", status_code=404)
        mask = _run_mask(session, user, run.batch_id)
        events = list(session.scalars(select(EventRow).where(EventRow.run_id == run.id).order_by(EventRow.seq)))
        body = render(run, events, mask.get(agent_name(run), "agent ?") if mask else None)
    return Response(body, media_type=media_type, headers={
        "Content-Disposition": f'attachment; filename="run-{run.id}.{suffix}"'})


def _atif_json(run: Run, events: list[EventRow], pseudonym: str | None) -> str:
    return json.dumps(to_atif(run, events, pseudonym).to_json_dict(), indent=1)


def _events_jsonl(_run: Run, events: list[EventRow], pseudonym: str | None) -> str:
    return "".join(f"{line}\n" for line in exports.event_lines(events, hide_models=pseudonym is not None))


@router.get("/dashboard/runs/{run_id}/atif.json")
def run_atif(request: Request, run_id: str) -> Response:
    """The run's trajectory as ATIF JSON (orchestrator/atif.py); under a pseudonym, without the model,
    for a viewer who may not see names."""
    return _run_download(request, run_id, "atif.json", "application/json", _atif_json)


@router.get("/dashboard/runs/{run_id}/events.jsonl")
def run_events_jsonl(request: Request, run_id: str) -> Response:
    """The run's stored events as JSON lines; model names blanked for a viewer who may not see them."""
    return _run_download(request, run_id, "events.jsonl", "application/x-ndjson", _events_jsonl)


@router.get("/dashboard/export.{fmt}")
def export_runs(request: Request, fmt: str, batch: str = "", family: str = "", condition: str = "") -> Response:
    """The runs the dashboard's filters select, one row each, as CSV, JSONL or Parquet
    (orchestrator/exports.py); blinded viewers get pseudonyms and no model column."""
    if fmt not in exports.FORMATS:
        return Response(f"Export as one of {', '.join(exports.FORMATS)}.", status_code=404)
    filters = Filters(batch, family, condition)
    state = service(request)
    with state.sessions() as session:
        user = _gate(request, session)
        if isinstance(user, Response):
            return user
        mask = None if names_visible(session, user, filters) else pseudonyms(score_queries.agent_names(
            session, filters.batch, filters.family, filters.condition))
        records = list(exports.rows(session, [filters.batch] if filters.batch else [], hazards_from(state.catalog),
                                    mask, filters.family, filters.condition))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"runs.{fmt}"
        exports.export(records, path, fmt)  # type: ignore[arg-type]
        body = path.read_bytes()
    media = {"csv": "text/csv", "jsonl": "application/x-ndjson", "parquet": "application/vnd.apache.parquet"}
    name = f"runs-{filters.batch or 'all'}.{fmt}"
    return Response(body, media_type=media[fmt], headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.get("/dashboard/compare", response_class=HTMLResponse)
def compare(request: Request, a: str = "", b: str = "") -> Response:
    """Two runs of one scenario (different agents or conditions) side by side, aligned by step."""
    state = service(request)
    with state.sessions() as session:
        user = _gate(request, session)
        if isinstance(user, Response):
            return user
        window = EventWindow(limit=COMPARE_EVENTS)
        try:
            left = run_view(session, state.catalog, state.store, a[:32], window)
            right = run_view(session, state.catalog, state.store, b[:32], window)
        except LookupError as exc:
            return templates.TemplateResponse(request, "dashboard_message.html", {
                "user": user, "message": f"Compare two runs: /dashboard/compare?a=RUN&b=RUN ({exc})."},
                status_code=404)
        left = _masked_view(left, _run_mask(session, user, left.batch_id))
        right = _masked_view(right, _run_mask(session, user, right.batch_id))
    return templates.TemplateResponse(request, "dashboard_compare.html", {
        "user": user, "left": left, "right": right, "steps": aligned_by_step(left.events, right.events),
        "same_scenario": left.scenario_id == right.scenario_id, "filters": Filters(batch=left.batch_id),
        "limit": COMPARE_EVENTS})


@router.get("/dashboard/batches/{batch_id}", response_class=HTMLResponse)
def batch_page(request: Request, batch_id: str, fragment: bool = False) -> Response:
    """A batch while it runs: counts by status, throughput, ETA and errors by layer; the page polls its
    own fragment every few seconds (htmx) until the batch is finished."""
    with service(request).sessions() as session:
        user = _gate(request, session)
        if isinstance(user, Response):
            return user
        batch = session.get(Batch, batch_id[:32])
        if batch is None:
            return templates.TemplateResponse(request, "dashboard_message.html", {
                "user": user, "message": f"No batch {batch_id[:32]}."}, status_code=404)
        detail = batch_detail(session, batch)
        errors = dict(session.execute(select(Run.error_layer, func.count()).where(
            Run.batch_id == batch.id, Run.verdict == "Error").group_by(Run.error_layer)).all())
        first = session.scalar(select(func.min(Run.started_at)).where(Run.batch_id == batch.id))
    elapsed = (datetime.now(UTC) - as_utc(first)).total_seconds() if first else None
    per_minute = round(detail.progress.finished / elapsed * 60, 2) if elapsed and detail.progress.finished else None
    context = {"user": user, "d": detail, "errors": {k or "unknown": v for k, v in errors.items()},
               "per_minute": per_minute, "filters": Filters(batch=batch.id),
               "live": detail.progress.finished < detail.progress.total and detail.status not in ("cancelled",)}
    return templates.TemplateResponse(request, "_batch_live.html" if fragment else "dashboard_batch.html", context)
