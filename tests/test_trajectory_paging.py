"""The trajectory viewer on a long run (issue #15 item 3): the page holds the first page of events and loads
the rest in pages, through a linked event, or by searching the whole run — all still blinded — and shows the
collected figures and PDFs inline (a blinded item's PDF only after the blind label)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from annotation.views import PAGE
from orchestrator import annotation_store as queue
from orchestrator.artifacts import ArtifactStore
from orchestrator.cli.service_cmd import migrate_database
from orchestrator.db.session import session_factory
from orchestrator.settings import Settings
from tests.annotation_support import PDF_MINIMAL, PNG_1X1, make_users, seed_long_run
from tests.test_annotation_pages import browser, csrf


@pytest.fixture
def long_item(settings: Settings) -> Iterator[tuple[Settings, TestClient, str]]:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    migrate_database(settings.effective_database_url)
    sessions = session_factory(settings.effective_database_url)
    run_id = seed_long_run(sessions, ArtifactStore(settings.artifact_dir))
    with sessions() as session:
        queue.route_for_review(session, run_id)
        session.commit()
    make_users(sessions, ["ada", "bob"])
    client = browser(settings, "ada")
    url = client.get("/annotate", follow_redirects=False).headers["location"]
    yield settings, client, url


def seqs(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<li id="e(\d+)" class="event', html)]


def test_a_long_run_opens_with_one_page_and_loads_the_rest(long_item) -> None:
    _settings, client, url = long_item
    page = client.get(url).text
    assert "(5000 events)" in page and seqs(page) == list(range(PAGE))
    assert f'hx-get="{url}/events?after={PAGE - 1}" hx-trigger="revealed"' in page
    shown = list(seqs(page))
    after = PAGE - 1
    while True:  # scroll to the end, page by page
        fragment = client.get(f"{url}/events", params={"after": after}).text
        got = seqs(fragment)
        shown += got
        more = re.search(r'data-after="(\d+)"', fragment)
        if more is None:
            break
        after = int(more.group(1))
        assert len(got) == PAGE
    assert shown == list(range(5000))


def test_a_link_loads_through_the_event_and_search_covers_the_whole_run(long_item) -> None:
    _settings, client, url = long_item
    through = client.get(f"{url}/events", params={"after": PAGE - 1, "until": 4400}).text
    assert seqs(through) == list(range(PAGE, 4401)) and 'data-after="4400"' in through
    found = client.get(f"{url}/events", params={"find": "ZEBRA-marker"}).text
    assert re.findall(r'<li id="found-e(\d+)"', found) == ["4321"] and 'href="#e4321"' in found
    # blinded: the model's name is masked in fragments, and searching for it finds nothing
    near = client.get(f"{url}/events", params={"after": 4420, "until": 4421}).text
    assert "signed by [masked]" in near and "gpt-4o" not in near
    assert "found-e" not in client.get(f"{url}/events", params={"find": "gpt-4o-mini"}).text


def test_fragments_are_the_annotators_own_and_never_carry_the_checklist(long_item) -> None:
    settings, client, url = long_item
    bob = browser(settings, "bob")
    assert bob.get(f"{url}/events", params={"after": 10}).status_code == 404
    assert bob.get(f"{url}/files/figures/residuals.png").status_code == 404
    page = client.get(url).text
    client.post(url + "/commit", data={"csrf_token": csrf(page), "label": "Pass", "evidence": "4"})
    fragment = client.get(f"{url}/events", params={"after": 10, "until": 40}).text
    assert "answer_" not in fragment and "checklist" not in fragment.lower()


def test_figures_and_pdfs_inline_and_a_blinded_pdf_only_after_the_blind_label(long_item) -> None:
    _settings, client, url = long_item
    page = client.get(url).text
    assert f'<img src="{url}/files/figures/residuals.png"' in page
    assert "<object" not in page  # the PDF is listed, not shown, before the blind label
    figure = client.get(f"{url}/files/figures/residuals.png")
    assert figure.status_code == 200 and figure.content == PNG_1X1
    assert figure.headers["content-type"] == "image/png" and figure.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in figure.headers["content-security-policy"]
    assert client.get(f"{url}/files/report/report.pdf").status_code == 404
    assert client.get(f"{url}/files/no/such.png").status_code == 404
    client.post(url + "/commit", data={"csrf_token": csrf(page), "label": "Pass", "evidence": "4"})
    assert f'<object data="{url}/files/report/report.pdf"' in client.get(url).text
    pdf = client.get(f"{url}/files/report/report.pdf")
    assert pdf.status_code == 200 and pdf.content == PDF_MINIMAL and pdf.headers["content-type"] == "application/pdf"
