"""The dashboards in a real browser (issue #16): a real batch of scripted runs in bwrap sandboxes on the
machine's PostgreSQL, then Debian's chromium (Playwright's Python package) on the overview and the heatmap.
Screenshots under ``tests/artifacts/dashboards/`` (not committed)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from agents.gateway.server import BackgroundServer
from orchestrator.api.app import create_app
from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
from orchestrator.cli.service_cmd import migrate_database
from orchestrator.db.session import session_factory
from orchestrator.embedded import make_context, run_batch
from orchestrator.settings import Settings
from tests.annotation_support import make_users
from tests.conftest import requires_bwrap
from tests.test_annotation_browser import CHROMIUM, ON_CI, sign_in
from tests.test_annotation_browser import pytestmark as browser_marks
from tests.test_postgres import ADMIN_URL, _admin_engine

SHOTS = Path(__file__).parent / "artifacts" / "dashboards"
SCENARIOS = ["t08-soil-respiration-trap", "t08-soil-respiration-control", "t02-retinal-classifier-trap",
             "t05-seismic-catalog-trap"]
pytestmark = [*browser_marks, requires_bwrap]
playwright = pytest.importorskip("playwright.sync_api") if not ON_CI else __import__("playwright.sync_api").sync_api


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, object]]:
    name = f"il_dash_{uuid.uuid4().hex[:10]}"
    with _admin_engine().connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    settings = Settings(data_dir=tmp_path_factory.mktemp("dash"), database_url=url)
    migrate_database(url)
    ctx = make_context(settings, backend="bwrap")
    spec = BatchSpec(name="dashboard browser", selection=Selection(ids=SCENARIOS),
                     agents=[AgentSpec(model="scripted:honest"), AgentSpec(model="scripted:fabricator")],
                     conditions=["none", "completion"])
    batch_id, count = plan_batch(ctx.sessions, ctx.catalog, spec)
    assert count == 16 and run_batch(ctx, batch_id, workers=4) == []
    make_users(ctx.sessions, ["root"], role="admin")
    server = BackgroundServer(create_app(settings)).start()
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        yield server.url, batch_id, ctx
    finally:
        server.stop()
        session_factory(url).kw["bind"].dispose()
        with _admin_engine().connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


def test_overview_and_heatmap_render_a_finished_batch(served, chromium) -> None:  # type: ignore[no-untyped-def]
    base, batch_id, _ctx = served
    context = chromium.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(base) else None)
    sign_in(page, base, "root", then=f"/dashboard?batch={batch_id}", lands="**/dashboard?batch=*")
    page.wait_for_selector('#resistance-chart[data-rendered="yes"] svg')
    page.screenshot(path=str(SHOTS / "1-overview.png"), full_page=True)
    rows = page.locator("#overview tbody tr")
    assert rows.count() == 4  # two agents x two conditions
    text = page.locator("#overview").inner_text()
    assert "react/scripted:honest" in text and "react/scripted:fabricator" in text
    # the chart drew one interval and one dot per agent and condition
    assert page.locator("#resistance-chart svg g.mark-symbol.role-mark path").count() == 4
    assert page.locator("#resistance-chart svg g.mark-rule.role-mark line").count() == 4

    page.goto(f"{base}/dashboard/heatmap?batch={batch_id}")
    page.wait_for_selector('#heatmap-chart[data-rendered="yes"] svg')
    page.screenshot(path=str(SHOTS / "2-heatmap.png"), full_page=True)
    cells = page.locator("#heatmap-chart svg g.mark-rect.role-mark path")
    assert cells.count() == 12  # (two agents x two conditions) x three trap categories (T02, T05, T08)
    cells.first.click(force=True)  # the count drawn on the cell is on top; both link
    page.wait_for_url("**/dashboard/runs?*")
    page.screenshot(path=str(SHOTS / "3-cell-runs.png"), full_page=True)
    listed = page.locator("#runs tbody tr")
    assert listed.count() == 1  # a cell is one agent's one trap under one condition in this batch
    listed.first.locator("a").first.click()
    page.wait_for_url("**/dashboard/runs/*")
    page.wait_for_selector("#events li.event")
    page.screenshot(path=str(SHOTS / "5-run.png"), full_page=False)
    assert page.locator("#judgements section").count() >= 1 and page.locator("#verdict").inner_text() != "—"
    cites = page.locator("#judgements a.cites")
    if cites.count():  # a finding's event link lands on the event in the trajectory
        target = cites.first.get_attribute("href")
        cites.first.click()
        page.wait_for_selector(f"{target}")
    page.locator("#siblings a.compare").first.click()
    page.wait_for_url("**/dashboard/compare?*")
    page.screenshot(path=str(SHOTS / "6-compare.png"), full_page=False)
    assert page.locator("#compare thead th").count() == 3 and page.locator("#compare tr.step-row").count() >= 2
    assert page.locator("#compare td.left .event").count() and page.locator("#compare td.right .event").count()

    page.goto(f"{base}/dashboard/ablation?batch={batch_id}")
    page.wait_for_selector('#forest-chart[data-rendered="yes"] svg')
    page.screenshot(path=str(SHOTS / "4-ablation.png"), full_page=True)
    assert page.locator("#ablation tbody tr").count() == 8  # two agents x (all + three categories)
    assert page.locator("#forest-chart svg g.mark-symbol.role-mark path").count() == 8
    assert "completion" in page.locator("#ablation").inner_text()
    assert outside == [], f"the pages fetched from elsewhere: {outside}"
    context.close()


def test_the_html_report_opens_with_the_network_blocked(served, chromium, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from orchestrator.cli.runs_cmd import write_html_report
    _base, batch_id, ctx = served
    report = write_html_report(ctx, batch_id, tmp_path / "report.html")
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    asked: list[str] = []

    def block(route) -> None:  # type: ignore[no-untyped-def]
        asked.append(route.request.url)
        route.abort() if not route.request.url.startswith("file://") else route.continue_()
    context.route("**/*", block)
    page = context.new_page()
    page.goto(report.as_uri())
    page.screenshot(path=str(SHOTS / "7-html-report.png"), full_page=True)
    assert page.locator("#overview tbody tr").count() == 4 and page.locator("#ablation tbody tr").count() == 8
    assert page.locator("figure svg").count() == 3  # resistance, heatmap, forest: inline, drawn without a script
    assert page.locator("figure svg").first.bounding_box()["width"] > 200
    assert [u for u in asked if not u.startswith("file://")] == []
    context.close()
