"""Sign-in pages (issue #15, first slice): CSRF on every form, throttling, cookie flags, safe redirects."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from orchestrator.accounts import create_user
from orchestrator.api.app import create_app
from orchestrator.api.web_sessions import MAX_FAILURES
from orchestrator.cli.service_cmd import migrate_database
from orchestrator.db.models import LoginAttempt, WebSession
from orchestrator.db.session import session_factory
from orchestrator.settings import Settings

PASSWORD = "correct horse battery"


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    migrate_database(settings.effective_database_url)
    with session_factory(settings.effective_database_url)() as session:
        create_user(session, "ada", "annotator", PASSWORD)
        session.commit()
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as c:
        yield c


def form_token(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, html
    return match.group(1)


def sign_in(client: TestClient, password: str = PASSWORD, name: str = "ada", next_: str = "/account"):  # type: ignore[no-untyped-def]
    token = form_token(client.get("/login").text)
    return client.post("/login", data={"name": name, "password": password, "csrf_token": token, "next": next_},
                       follow_redirects=False)


def sessions_in(settings: Settings) -> int:
    with session_factory(settings.effective_database_url)() as session:
        return session.query(WebSession).count()


def test_signing_in_sets_an_httponly_samesite_cookie_and_opens_the_account_page(client: TestClient,
                                                                                settings: Settings) -> None:
    answer = sign_in(client)
    assert answer.status_code == 303 and answer.headers["location"] == "/account"
    cookie = next(h for h in answer.headers.get_list("set-cookie") if h.startswith("il_session="))
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Secure" not in cookie
    page = client.get("/account")
    assert page.status_code == 200 and "Signed in as ada" in page.text and "annotator" in page.text
    assert sessions_in(settings) == 1


def test_a_post_without_the_form_s_csrf_token_is_refused_and_signs_no_one_in(client: TestClient,
                                                                             settings: Settings) -> None:
    client.get("/login")
    answer = client.post("/login", data={"name": "ada", "password": PASSWORD}, follow_redirects=False)
    assert answer.status_code == 403 and "il_session" not in answer.headers.get("set-cookie", "")
    forged = client.post("/login", data={"name": "ada", "password": PASSWORD, "csrf_token": "x" * 43},
                         follow_redirects=False)
    assert forged.status_code == 403 and sessions_in(settings) == 0


def test_signing_out_needs_the_session_s_csrf_token(client: TestClient, settings: Settings) -> None:
    sign_in(client)
    refused = client.post("/logout", data={}, follow_redirects=False)
    assert refused.status_code == 403 and client.get("/account").status_code == 200
    token = form_token(client.get("/account").text)
    out = client.post("/logout", data={"csrf_token": token}, follow_redirects=False)
    assert out.status_code == 303 and sessions_in(settings) == 0
    assert client.get("/account", follow_redirects=False).headers["location"].startswith("/login")


def test_repeated_failures_throttle_the_name_even_with_the_right_password(client: TestClient,
                                                                          settings: Settings) -> None:
    for _ in range(MAX_FAILURES):
        wrong = sign_in(client, password="not the password")
        assert wrong.status_code == 401 and "Name or password is wrong" in wrong.text
    blocked = sign_in(client)
    assert blocked.status_code == 429 and "try again in" in blocked.text and sessions_in(settings) == 0
    assert sign_in(client, name="nobody", password="x").status_code == 401  # other names are not blocked
    with session_factory(settings.effective_database_url)() as session:
        assert session.query(LoginAttempt).filter_by(name="ada", ok=False).count() == MAX_FAILURES


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example/", "account"])
def test_sign_in_never_redirects_off_the_site(client: TestClient, target: str) -> None:
    assert sign_in(client, next_=target).headers["location"] == "/account"


def test_an_unknown_or_forged_session_cookie_is_not_signed_in(client: TestClient) -> None:
    client.cookies.set("il_session", "forged")
    assert client.get("/account", follow_redirects=False).status_code == 303
