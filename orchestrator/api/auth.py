"""Bearer API tokens with roles, and the audit log every write goes to.

A token is ``il_`` + 32 random bytes (URL-safe base64); only its SHA-256 is
stored, so a leaked database does not leak working tokens. Roles: ``admin``
submits, cancels and re-judges; ``annotator`` reads (the annotation queue will
give it its own writes).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from orchestrator.db.models import ApiToken, AuditEntry
from orchestrator.runs import as_utc, utcnow

TOKEN_PREFIX = "il_"
LAST_USED_RESOLUTION = timedelta(minutes=1)


class Role(StrEnum):
    admin = "admin"
    annotator = "annotator"


@dataclass(frozen=True)
class Principal:
    token_id: str
    name: str
    role: Role


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def create_token(session: Session, name: str, role: Role | str, actor: str = "cli") -> tuple[ApiToken, str]:
    """Add a token (not committed); returns the row and the secret, which is shown once and never stored."""
    role = Role(role)
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(name=name, role=role.value, token_hash=hash_token(secret))
    session.add(row)
    session.flush()
    audit(session, Principal(token_id="", name=actor, role=Role.admin), "token.create", f"token:{row.id}",
          {"name": name, "role": role.value})
    return row, secret


def revoke_token(session: Session, token_id: str, actor: str = "cli") -> bool:
    result = session.execute(update(ApiToken).where(ApiToken.id == token_id, ApiToken.revoked_at.is_(None))
                             .values(revoked_at=utcnow()))
    if result.rowcount:
        audit(session, Principal(token_id="", name=actor, role=Role.admin), "token.revoke", f"token:{token_id}", {})
    return bool(result.rowcount)


def audit(session: Session, who: Principal, action: str, target: str, detail: dict[str, Any]) -> None:
    """Record a write in the caller's transaction, so the change and its audit row commit together."""
    session.add(AuditEntry(actor=who.name, token_id=who.token_id or None, role=who.role.value, action=action,
                           target=target[:100], detail=detail))


def _unauthorized(message: str) -> HTTPException:
    return HTTPException(status.HTTP_401_UNAUTHORIZED, detail=message, headers={"WWW-Authenticate": "Bearer"})


#: declares the scheme in the OpenAPI document; the header itself is read below, so every refusal has our wording
_bearer = HTTPBearer(auto_error=False, scheme_name="bearer",
                     description="`integritylab tokens create NAME --role admin|annotator` prints a token")


def authenticate(request: Request,
                 _declared: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)] = None) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise _unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    secret = secret.strip()
    if len(secret) > 200 or not secret.startswith(TOKEN_PREFIX):
        raise _unauthorized("invalid token")
    sessions = request.app.state.service.sessions
    with sessions() as session:
        row = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(secret)))
        if row is None or row.revoked_at is not None:
            raise _unauthorized("invalid or revoked token")
        now = utcnow()
        last = as_utc(row.last_used_at)
        if last is None or now - last > LAST_USED_RESOLUTION:
            row.last_used_at = now
            session.commit()
        return Principal(token_id=row.id, name=row.name, role=Role(row.role))


def require_admin(principal: Annotated[Principal, Depends(authenticate)]) -> Principal:
    if principal.role != Role.admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, detail=f"role {principal.role.value!r} may not do this; "
                                                              "it needs an admin token")
    return principal


Reader = Annotated[Principal, Depends(authenticate)]
Admin = Annotated[Principal, Depends(require_admin)]
