"""Every status and content type the API can answer with, declared once for the OpenAPI document.

A client generated from ``/openapi.json`` (or a schemathesis run against it)
must meet no response the document does not name: the middleware's 400 and
413, the auth dependency's 401 and 403, a missing resource's 404, the 422 of
validation, and the 500 of an unexpected failure. Routers take these as
``responses=`` so the declarations sit beside the code that answers them.
"""

from __future__ import annotations

import mimetypes
from typing import Any

from pydantic import BaseModel, Field


class Problem(BaseModel):
    """One invalid field: where it is and what is wrong with it."""

    loc: list[str | int]
    msg: str
    type: str


class ErrorOut(BaseModel):
    """The one error shape: a sentence, or for 422 a list of located problems."""

    detail: str | list[Problem] = Field(description="what went wrong; for 422 a list naming each bad field")


def error_response(description: str) -> dict[str, Any]:
    return {"model": ErrorOut, "description": description}


#: answered by any route: the URL guard, validation of query/path/header values, and unexpected failures
COMMON: dict[int | str, dict[str, Any]] = {
    400: error_response("the URL holds a NUL character"),
    422: error_response("a parameter or field is invalid; `detail[].loc` names it"),
    500: error_response("an unexpected failure (logged with the request id the message gives)"),
}
#: routes behind a bearer token
AUTHENTICATED: dict[int | str, dict[str, Any]] = {
    **COMMON,
    401: error_response("no bearer token, or an invalid or revoked one"),
}
ADMIN_ONLY: dict[int | str, dict[str, Any]] = {403: error_response("the token's role may not do this; it needs admin")}
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: error_response("no such resource")}
WITH_BODY: dict[int | str, dict[str, Any]] = {413: error_response("the request body is larger than the service accepts")}


def conflict(description: str) -> dict[int | str, dict[str, Any]]:
    return {409: error_response(description)}


#: the media types an artifact download is served as; anything else goes out as application/octet-stream
ARTIFACT_MEDIA_TYPES = (
    "text/plain", "text/markdown", "text/csv", "text/x-python", "text/x-tex", "text/html",
    "application/json", "application/pdf", "image/png", "image/jpeg", "image/svg+xml", "application/octet-stream",
)
TEXT_SUFFIXES = (".md", ".json", ".csv", ".py", ".tex", ".txt", ".log", ".yaml", ".yml")


def artifact_media_type(name: str) -> str:
    """The declared media type an artifact called ``name`` is served as (text with its charset)."""
    guessed = mimetypes.guess_type(name)[0] or ""
    if name.endswith(".md"):
        guessed = "text/markdown"
    if guessed not in ARTIFACT_MEDIA_TYPES:
        guessed = "text/plain" if guessed.startswith("text/") or name.endswith(TEXT_SUFFIXES) \
            else "application/octet-stream"
    if guessed.startswith("text/") or guessed == "application/json":
        return f"{guessed}; charset=utf-8"
    return guessed


ARTIFACT_CONTENT: dict[str, dict[str, Any]] = {
    media: {"schema": {"type": "string", "format": "binary"}} for media in ARTIFACT_MEDIA_TYPES
}
