"""Accounts for the web pages (issue #15): argon2 hashes, clear refusals, the CLI on the embedded default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from orchestrator.accounts import AccountError, authenticate, create_user, list_users
from orchestrator.cli.service_cmd import migrate_database
from orchestrator.db.models import AuditEntry, UserAccount
from orchestrator.db.session import session_factory
from orchestrator.settings import Settings

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "correct horse battery"


@pytest.fixture
def session(settings: Settings):  # type: ignore[no-untyped-def]
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    migrate_database(settings.effective_database_url)
    with session_factory(settings.effective_database_url)() as s:
        yield s


def test_only_an_argon2id_hash_is_stored_and_it_checks_the_password(session) -> None:  # type: ignore[no-untyped-def]
    user = create_user(session, "ada", "annotator", PASSWORD)
    session.commit()
    assert user.password_hash.startswith("$argon2id$") and PASSWORD not in user.password_hash
    assert authenticate(session, "ada", PASSWORD) is user
    assert authenticate(session, "ada", PASSWORD + "x") is None
    assert authenticate(session, "nobody", PASSWORD) is None
    audit = session.scalars(select(AuditEntry).where(AuditEntry.action == "user.create")).one()
    assert audit.detail == {"name": "ada", "role": "annotator"} and PASSWORD not in str(audit.detail)


def test_two_accounts_with_one_password_get_different_hashes(session) -> None:  # type: ignore[no-untyped-def]
    a = create_user(session, "ada", "annotator", PASSWORD)
    b = create_user(session, "bo", "admin", PASSWORD)
    assert a.password_hash != b.password_hash  # salted
    assert [u.name for u in list_users(session)] == ["ada", "bo"]


@pytest.mark.parametrize(("name", "role", "password", "field"), [
    ("ada", "boss", PASSWORD, "role"),
    ("ada", "annotator", "short", "password"),
    ("two words", "annotator", PASSWORD, "name"),
    ("", "admin", PASSWORD, "name"),
])
def test_bad_input_names_its_field_and_creates_nothing(session, name: str, role: str, password: str,  # type: ignore[no-untyped-def]
                                                       field: str) -> None:
    with pytest.raises(AccountError, match=rf"^{field}\b"):
        create_user(session, name, role, password)
    assert session.scalars(select(UserAccount)).all() == []


def test_a_disabled_account_cannot_sign_in(session) -> None:  # type: ignore[no-untyped-def]
    from orchestrator.runs import utcnow

    user = create_user(session, "ada", "annotator", PASSWORD)
    user.disabled_at = utcnow()
    assert authenticate(session, "ada", PASSWORD) is None


def _cli(settings: Settings, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("INTEGRITYLAB_")},
           "INTEGRITYLAB_DATA_DIR": str(settings.data_dir), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "orchestrator.cli.app", "users", *args], input=stdin,
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120, check=False)


def test_the_cli_creates_from_stdin_refuses_a_duplicate_and_lists(settings: Settings) -> None:
    made = _cli(settings, "create", "ada", "--role", "annotator", "--password-stdin", stdin=PASSWORD + "\n")
    assert made.returncode == 0, made.stderr
    again = _cli(settings, "create", "ada", "--role", "admin", "--password-stdin", stdin=PASSWORD + "\n")
    assert again.returncode == 2 and "a user of that name exists" in again.stderr
    no_tty = _cli(settings, "create", "bo", "--role", "admin")
    assert no_tty.returncode == 2 and "--password-stdin" in no_tty.stderr
    listed = _cli(settings, "list")
    assert listed.returncode == 0 and "ada" in listed.stdout and "annotator" in listed.stdout
    assert "bo" not in listed.stdout.split()
    with session_factory(settings.effective_database_url)() as s:
        assert authenticate(s, "ada", PASSWORD) is not None
