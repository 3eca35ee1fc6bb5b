"""The annotation queue in a real browser (issue #15): Playwright's Python package driving Debian's
chromium against the running app on the machine's PostgreSQL. Screenshots of each page are kept under
``tests/artifacts/annotation/`` (not committed)."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select, text

from agents.gateway.server import BackgroundServer
from orchestrator import annotation_store as queue
from orchestrator.api.app import create_app
from orchestrator.artifacts import ArtifactStore
from orchestrator.db.models import Assignment, Run
from orchestrator.db.session import session_factory
from orchestrator.settings import Settings
from tests.annotation_support import PASSWORD, make_users, seed_run
from tests.test_postgres import ADMIN_URL, REACHABLE, WHY, _admin_engine

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = Path(__file__).parent / "artifacts" / "annotation"
ON_CI = os.environ.get("CI", "").lower() == "true"
playwright = pytest.importorskip("playwright.sync_api") if not ON_CI else __import__("playwright.sync_api").sync_api
pytestmark = [pytest.mark.skipif(not Path(CHROMIUM).exists() and not ON_CI, reason="no chromium (apt install chromium)"),
              pytest.mark.skipif(not REACHABLE and not ON_CI, reason=WHY)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Settings, str]]:
    name = f"il_browser_{uuid.uuid4().hex[:10]}"
    with _admin_engine().connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    settings = Settings(data_dir=tmp_path_factory.mktemp("browser"), database_url=url)
    sessions = session_factory(url)
    run_id = seed_run(sessions, ArtifactStore(settings.artifact_dir))
    with sessions() as session:
        queue.route_for_review(session, run_id)
        session.commit()
    make_users(sessions, ["ada", "bob"])
    server = BackgroundServer(create_app(settings)).start()
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        yield server.url, settings, run_id
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


def sign_in(page, base: str, name: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base}/login?next=/annotate")
    assert page.evaluate("document.activeElement.id") == "name"  # keyboard only: the name field has focus
    page.keyboard.type(name)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url("**/annotate/items/*")


def test_label_blind_with_the_keyboard_then_the_checklist_appears(served, chromium) -> None:  # type: ignore[no-untyped-def]
    base, settings, run_id = served
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    sign_in(page, base, "ada")
    page.screenshot(path=str(SHOTS / "1-blind-label.png"), full_page=False)
    assert page.locator("#checklist-form").count() == 0
    assert "gpt-4o-mini" not in page.content()
    page.keyboard.press("3")  # Fail
    assert page.locator('input[name="label"][value="Fail"]').is_checked()
    page.keyboard.press("e")
    page.keyboard.type("9, 12")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#checklist-form")
    page.screenshot(path=str(SHOTS / "2-checklist.png"), full_page=False)
    assert page.locator("#blind-label").inner_text() == "Fail"
    questions = page.locator("fieldset.question")
    for i in range(questions.count()):
        questions.nth(i).locator('input[value="no"]').check()
    page.locator('#checklist-form input[name="label"][value="Flawed"]').check()
    page.locator("#checklist-form button[type=submit]").click()
    page.wait_for_url("**/annotate?done=1")
    page.screenshot(path=str(SHOTS / "3-after-submit.png"))
    assert "Nothing to review right now" in page.content()  # the item's other slot is not ada's to take
    with session_factory(settings.effective_database_url)() as session:
        mine = session.scalar(select(Assignment))
        assert (mine.state, mine.blind_label, mine.final_label, mine.blind_evidence) == ("submitted", "Fail", "Flawed", [9, 12])
        assert session.get(Run, run_id).status == "awaiting_review"
    context.close()


def test_search_within_the_run_and_event_links(served, chromium) -> None:  # type: ignore[no-untyped-def]
    base, _settings, _run = served
    context = chromium.new_context()
    page = context.new_page()
    sign_in(page, base, "bob")
    total = page.locator("#events > li").count()
    page.keyboard.press("/")
    page.keyboard.type("validate_tags")
    shown = page.locator("#events > li:not(.hidden)").count()
    assert 0 < shown < total
    page.screenshot(path=str(SHOTS / "4-search.png"))
    context.close()
