"""Signed-in browser sessions, CSRF tokens and sign-in throttling, stored in the database.

The cookie carries a random secret; the table keeps only its SHA-256, so a copy of the database
does not sign anyone in. Each session has its own CSRF token, which every form posts back; the
sign-in form, before there is a session, uses a double-submit cookie instead.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from orchestrator.api.auth import hash_token
from orchestrator.db.models import LoginAttempt, UserAccount, WebSession
from orchestrator.runs import as_utc, utcnow

SESSION_COOKIE = "il_session"
LOGIN_CSRF_COOKIE = "il_login_csrf"
SESSION_LIFETIME = timedelta(hours=12)
#: failed sign-ins for one name within the window after which further attempts are refused until it passes
MAX_FAILURES, FAILURE_WINDOW = 5, timedelta(minutes=15)


@dataclass(frozen=True)
class SignedIn:
    user_id: str
    name: str
    role: str
    csrf_token: str


def new_token() -> str:
    return secrets.token_urlsafe(32)


def tokens_match(a: str | None, b: str | None) -> bool:
    return bool(a) and bool(b) and hmac.compare_digest(str(a), str(b))


def start_session(session: Session, user: UserAccount) -> str:
    """A new session for ``user``; returns the cookie secret (shown once, stored hashed)."""
    secret = new_token()
    session.add(WebSession(id=hash_token(secret), user_id=user.id, csrf_token=new_token(),
                           expires_at=utcnow() + SESSION_LIFETIME))
    return secret


def current(session: Session, secret: str | None) -> SignedIn | None:
    """The live session the cookie names, with its user, or None (unknown, lapsed, or the user disabled)."""
    if not secret or len(secret) > 200:
        return None
    row = session.get(WebSession, hash_token(secret))
    if row is None or as_utc(row.expires_at) <= utcnow():
        return None
    user = session.get(UserAccount, row.user_id)
    if user is None or user.disabled_at is not None:
        return None
    return SignedIn(user.id, user.name, user.role, row.csrf_token)


def end_session(session: Session, secret: str | None) -> None:
    if secret:
        session.execute(delete(WebSession).where(WebSession.id == hash_token(secret)))


def throttled_for(session: Session, name: str) -> timedelta | None:
    """How long ``name`` must wait before its next attempt, if it failed too often in the window."""
    since = utcnow() - FAILURE_WINDOW
    failures = session.scalars(select(LoginAttempt.at).where(
        LoginAttempt.name == name, LoginAttempt.ok.is_(False), LoginAttempt.at > since,
    ).order_by(LoginAttempt.at)).all()
    if len(failures) < MAX_FAILURES:
        return None
    return as_utc(failures[-MAX_FAILURES]) + FAILURE_WINDOW - utcnow()


def record_attempt(session: Session, name: str, ok: bool) -> None:
    session.add(LoginAttempt(name=name[:100], ok=ok))
    if ok:  # a success clears the name's failures
        session.execute(delete(LoginAttempt).where(LoginAttempt.name == name[:100], LoginAttempt.ok.is_(False)))

