"""Sign-in pages: ``/login``, ``/logout`` and ``/account``, server-rendered with Jinja2.

Signing in is the app's, like the API tokens; the annotation queue's own pages (``annotation/``) will be
mounted beside these and use the same session and CSRF token.

Cookies are HttpOnly and SameSite=Lax (Secure when the request came over https); every form posts
a CSRF token and a post without the right one is refused with 403, changing nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from orchestrator import accounts
from orchestrator.api import web_sessions as web
from orchestrator.api.state import service

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).parent / "templates")


def _secure(request: Request) -> bool:
    return request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"


def _safe_next(target: str) -> str:
    """Only a path on this site (never ``//evil`` or a full URL) may be where sign-in sends the browser."""
    parts = urlsplit(target or "")
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return "/account"
    return target


def _login_page(request: Request, status: int = 200, error: str = "", name: str = "", next_: str = "") -> Response:
    token = web.new_token()
    response = templates.TemplateResponse(request, "login.html", {
        "csrf_token": token, "error": error, "name": name, "next": _safe_next(next_)}, status_code=status)
    response.set_cookie(web.LOGIN_CSRF_COOKIE, token, httponly=True, samesite="lax", secure=_secure(request),
                        max_age=3600, path="/login")
    return response


def signed_in(request: Request) -> web.SignedIn | None:
    with service(request).sessions() as session:
        return web.current(session, request.cookies.get(web.SESSION_COOKIE))


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str = "/account") -> Response:
    return _login_page(request, next_=next)


@router.post("/login")
def login(request: Request, name: Annotated[str, Form(max_length=100)] = "",
          password: Annotated[str, Form(max_length=1000)] = "",
          csrf_token: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "/account") -> Response:
    if not web.tokens_match(csrf_token, request.cookies.get(web.LOGIN_CSRF_COOKIE)):
        return _login_page(request, 403, "The form was stale or not sent by this page; please sign in again.")
    name = name.strip()
    with service(request).sessions() as session:
        wait = web.throttled_for(session, name)
        if wait is not None:
            minutes = max(1, round(wait.total_seconds() / 60))
            return _login_page(request, 429, f"Too many failed sign-ins for this name; try again in {minutes} min.",
                               name, next)
        user = accounts.authenticate(session, name, password)
        web.record_attempt(session, name, user is not None)
        if user is None:
            session.commit()
            return _login_page(request, 401, "Name or password is wrong.", name, next)
        secret = web.start_session(session, user)
        session.commit()
    response = RedirectResponse(_safe_next(next), status_code=303)
    response.set_cookie(web.SESSION_COOKIE, secret, httponly=True, samesite="lax", secure=_secure(request),
                        max_age=int(web.SESSION_LIFETIME.total_seconds()), path="/")
    response.delete_cookie(web.LOGIN_CSRF_COOKIE, path="/login")
    return response


@router.post("/logout")
def logout(request: Request, csrf_token: Annotated[str, Form()] = "") -> Response:
    user = signed_in(request)
    if user is None:
        return RedirectResponse("/login", status_code=303)
    if not web.tokens_match(csrf_token, user.csrf_token):
        return HTMLResponse("<p>Refused: the form carried no valid CSRF token. Nothing changed.</p>", status_code=403)
    with service(request).sessions() as session:
        web.end_session(session, request.cookies.get(web.SESSION_COOKIE))
        session.commit()
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(web.SESSION_COOKIE, path="/")
    return response


@router.get("/account", response_class=HTMLResponse)
def account(request: Request) -> Response:
    user = signed_in(request)
    if user is None:
        return RedirectResponse("/login?next=/account", status_code=303)
    hours = int(web.SESSION_LIFETIME.total_seconds() // 3600)
    return templates.TemplateResponse(request, "account.html", {"user": user, "expires": f"{hours} h"})
