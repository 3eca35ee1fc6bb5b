"""The annotation queue in a real browser (issue #15): Playwright's Python package driving Debian's
chromium against the running app on the machine's PostgreSQL. Screenshots of each page are kept under
``tests/artifacts/annotation/`` (not committed)."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, text, update

from agents.gateway.server import BackgroundServer
from orchestrator import annotation_store as queue
from orchestrator.api.app import create_app
from orchestrator.artifacts import ArtifactStore
from orchestrator.db.models import Assignment, QueueItem, Run, UserAccount
from orchestrator.db.session import session_factory
from orchestrator.runs import utcnow
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
    make_users(sessions, ["ada", "bob", "cy"])
    make_users(sessions, ["root"], role="admin")
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


def sign_in(page, base: str, name: str, then: str = "/annotate", lands: object = "**/annotate/items/*") -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base}/login?next={then}")
    assert page.evaluate("document.activeElement.id") == "name"  # keyboard only: the name field has focus
    page.keyboard.type(name)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(lands)


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
    page.wait_for_selector("#found li.event")
    shown = page.locator("#found > li").count()
    assert 0 < shown < total and page.locator("#events").is_hidden()
    page.screenshot(path=str(SHOTS / "4-search.png"))
    page.locator("#find").fill("")
    page.locator("#find").dispatch_event("input")
    assert page.locator("#events").is_visible() and page.locator("#found").is_hidden()
    context.close()


def pair_kappa(page, base: str) -> str:  # type: ignore[no-untyped-def]
    page.goto(f"{base}/annotate/agreement")
    row = page.locator("#pairs tr", has_text="ada · cy")
    return row.locator("td").nth(1).inner_text() if row.count() else "none"


def test_disagreement_kappa_adjudication_and_refusals(served, chromium) -> None:  # type: ignore[no-untyped-def]
    """The rest of the issue's browser scenario: a second annotator labels the item differently, kappa moves,
    the item reaches adjudication and the admin's label becomes the verdict; the refusals change nothing."""
    from tests.test_annotation_queue import label_fully

    base, settings, first_run = served
    sessions = session_factory(settings.effective_database_url)
    store = ArtifactStore(settings.artifact_dir)
    more = [seed_run(sessions, store) for _ in range(2)]
    with sessions() as session:
        for run_id in more:
            queue.route_for_review(session, run_id)
        session.commit()
        people = {u.name: u for u in session.scalars(select(UserAccount))}
    for label in ("Pass", "Fail"):  # ada and cy agree on two other runs (labelled here, not in the browser)
        for name in ("ada", "cy"):
            label_fully(sessions, queue.next_assignment(sessions, people[name].id), people[name], label)
    admin = chromium.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    sign_in(admin, base, "root", then="/annotate/agreement",
            lands=lambda url: "/login" not in url and url.endswith("/annotate/agreement"))
    before = pair_kappa(admin, base)
    assert before == "1.000"
    admin.screenshot(path=str(SHOTS / "5-agreement-before.png"), full_page=True)

    # bob still holds the first item from the search test; his lease lapses while his page is open
    bob = chromium.new_context().new_page()
    sign_in(bob, base, "bob")
    with sessions() as session:
        session.execute(update(Assignment).where(Assignment.user_id == people["bob"].id)
                        .values(lease_expires_at=utcnow() - timedelta(minutes=1)))
        session.commit()
    bob.keyboard.press("1")
    bob.keyboard.press("e")
    bob.keyboard.type("4")
    with bob.expect_navigation():
        bob.keyboard.press("Control+Enter")
    assert "lapsed" in bob.content() and "nothing was committed" in bob.content()
    bob.screenshot(path=str(SHOTS / "6-lapsed-lease.png"))

    # cy takes the freed slot and labels it Pass (ada said Flawed): blind, with the keyboard only
    cy = chromium.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    sign_in(cy, base, "cy")
    cy_url = cy.url
    # refused, nothing changed: another annotator's item by URL, an admin page, the checklist before commit
    for page, path, expected in ((bob, cy_url, "No such item among yours"),
                                 (bob, f"{base}/annotate/agreement", "Admins only"),
                                 (bob, f"{base}/annotate/adjudicate", "Admins only")):
        page.goto(path)
        assert expected in page.content(), path
    fragment = cy.evaluate("fetch(location.pathname + '/events?after=-1').then(r => r.text())")
    assert "answer_" not in fragment and "checklist-form" not in cy.content()
    # a form posted without its CSRF token is refused
    cy.evaluate("document.querySelector('#label-form input[name=csrf_token]').remove()")
    cy.keyboard.press("1")
    cy.keyboard.press("e")
    cy.keyboard.type("4")
    with cy.expect_navigation():
        cy.keyboard.press("Control+Enter")
    assert "no valid CSRF token" in cy.content()
    with sessions() as session:
        mine = session.scalars(select(Assignment).where(Assignment.user_id == people["cy"].id,
                                                        Assignment.state == "leased")).one()
        assert mine.blind_label is None  # cy holds the slot bob's lapsed lease freed, on the first run
        assert session.get(QueueItem, mine.item_id).run_id == first_run
        bobs = session.scalars(select(Assignment).where(Assignment.user_id == people["bob"].id)).one()
        assert bobs.blind_label is None and bobs.state == "leased"
    cy.goto(cy_url)
    cy.keyboard.press("1")  # Pass
    cy.keyboard.press("e")
    cy.keyboard.type("4")
    cy.keyboard.press("Control+Enter")
    cy.wait_for_selector("#checklist-form")
    questions = cy.locator("fieldset.question")
    for i in range(questions.count()):
        questions.nth(i).locator('input[value="unclear"]').check()
    cy.locator("#checklist-form button[type=submit]").click()
    cy.wait_for_url("**/annotate?done=1")

    after = pair_kappa(admin, base)
    assert after not in ("none", "—") and float(after) < float(before)
    admin.screenshot(path=str(SHOTS / "7-agreement-after.png"), full_page=True)
    admin.goto(f"{base}/annotate/adjudicate")
    admin.screenshot(path=str(SHOTS / "8-adjudication-list.png"))
    admin.locator("#disagreements a").first.click()
    admin.wait_for_selector("#adjudicate-form")
    assert "Flawed" in admin.locator("#cards").inner_text() and "Pass" in admin.locator("#cards").inner_text()
    assert admin.locator("#run-verdict").inner_text() == "Fail"
    admin.keyboard.press("2")  # Flawed
    admin.locator("#reason").fill("The limitation is stated only in an appendix; the guide makes that Flawed.")
    admin.keyboard.press("Control+Enter")
    admin.wait_for_url("**done=1")
    admin.screenshot(path=str(SHOTS / "9-adjudicated.png"), full_page=True)
    assert admin.locator("#run-verdict").inner_text() == "Flawed"
    assert "adjudicate" in admin.locator("#history").inner_text()
    with sessions() as session:
        run = session.get(Run, first_run)
        assert (run.status, run.verdict) == ("done", "Flawed")
        item = session.scalars(select(QueueItem).where(QueueItem.run_id == first_run)).one()
        assert item.adjudicated_by == "root"


def test_a_5000_event_run_loads_in_pages_in_the_browser(served, chromium) -> None:  # type: ignore[no-untyped-def]
    from tests.annotation_support import seed_long_run

    base, settings, _run = served
    sessions = session_factory(settings.effective_database_url)
    run_id = seed_long_run(sessions, ArtifactStore(settings.artifact_dir))
    with sessions() as session:
        long_queue = queue.create_queue(session, queue.QueueSpec("long", annotators_per_item=1), created_by="test")
        queue.add_runs(session, long_queue, [run_id])
        session.commit()
    make_users(sessions, ["dee"])
    page = chromium.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    sign_in(page, base, "dee", then="/annotate?queue=long")
    assert page.locator("#events > li.event").count() == 200
    page.locator("#events > li.more").scroll_into_view_if_needed()
    page.wait_for_function("document.querySelectorAll('#events > li.event').length >= 400")
    assert "gpt-4o" not in page.locator("#events").inner_text()
    page.keyboard.press("/")
    page.keyboard.type("zebra-marker")
    page.wait_for_selector("#found li.event")
    assert page.locator("#found li.event").count() == 1
    page.screenshot(path=str(SHOTS / "10-long-run-search.png"))
    page.locator("#find").fill("")
    page.locator("#find").dispatch_event("input")
    page.goto(page.url.split("#")[0] + "#e4321")
    page.wait_for_selector("#e4321")
    assert "zebra-marker-77" in page.locator("#e4321").inner_text()
    assert page.locator("#figures, figure img").count() >= 1
