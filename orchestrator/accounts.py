"""Accounts for the web pages: annotators and admins who sign in with a name and a password (the
app's, beside the API tokens; the annotation queue refers to them by name).

Passwords are hashed with argon2id (``argon2-cffi``, the maintained binding of the reference
implementation, with its default cost parameters); a hash made with older parameters is replaced
at the next successful sign-in. Roles are the API tokens' roles, so one vocabulary decides what a
person or a script may do.
"""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from orchestrator.api.auth import Principal, Role, audit
from orchestrator.db.models import UserAccount

MIN_PASSWORD_LENGTH = 10
_hasher = PasswordHasher()


class AccountError(ValueError):
    """A user that cannot be created as asked; the message names the field."""


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def create_user(session: Session, name: str, role: Role | str, password: str, actor: str = "cli") -> UserAccount:
    """Add an account (the caller commits); the audit log records who created it, never the password."""
    name = name.strip()
    if not name or len(name) > 100 or any(c.isspace() for c in name):
        raise AccountError(f"name {name!r}: 1 to 100 characters without spaces")
    try:
        role = Role(role)
    except ValueError as exc:
        raise AccountError(f"role {role!r}: must be one of {', '.join(r.value for r in Role)}") from exc
    if len(password) < MIN_PASSWORD_LENGTH:
        raise AccountError(f"password: at least {MIN_PASSWORD_LENGTH} characters")
    if session.scalar(select(UserAccount).where(UserAccount.name == name)) is not None:
        raise AccountError(f"name {name!r}: a user of that name exists")
    user = UserAccount(name=name, role=role.value, password_hash=hash_password(password))
    session.add(user)
    session.flush()
    audit(session, Principal(token_id="", name=actor, role=Role.admin), "user.create", f"user:{user.id}",
          {"name": name, "role": role.value})
    return user


def authenticate(session: Session, name: str, password: str) -> UserAccount | None:
    """The enabled account with this name and password, or None (the same answer for a wrong name or password)."""
    user = session.scalar(select(UserAccount).where(UserAccount.name == name.strip()))
    if user is None or user.disabled_at is not None:
        _hasher.hash(password)  # spend the same time as a real check, so a name cannot be probed by timing
        return None
    try:
        _hasher.verify(user.password_hash, password)
    except (VerificationError, InvalidHashError):
        return None
    if _hasher.check_needs_rehash(user.password_hash):
        user.password_hash = hash_password(password)
    return user


def list_users(session: Session) -> list[UserAccount]:
    return list(session.scalars(select(UserAccount).order_by(UserAccount.created_at)))
