"""The annotation pages: ``/annotate`` (the next item), the review page, and its blind and checklist forms.

The app mounts :func:`build_router` with a :class:`QueueBackend` (the database side lives in the
orchestrator, which this package must not import). Every page needs a signed-in user; every post
carries the session's CSRF token, and one without it is refused (403) with nothing changed. An
item that is not the user's is answered 404, as if it did not exist.
"""

from __future__ import annotations

import functools
import hmac
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Protocol

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.datastructures import UploadFile

from annotation.adjudication import AdjudicationView, DisagreementRow
from annotation.agreement import AgreementReport, JudgeAgreement
from annotation.checklist import ChecklistAnswer
from annotation.exchange import ExchangeError, LabelRecord, dumps, format_of, loads
from annotation.leases import LeaseError, NotYours
from annotation.render import report_html
from annotation.views import INLINE_IMAGES, EventWindow, ItemView

HERE = Path(__file__).resolve().parent
#: the labelling guide shown on the page, per scenario family: docs/ in a checkout, or where an install
#: (the service image) puts them (pyproject's data-files: <prefix>/share/integritylab/docs)
GUIDES = {"dilemma": "labelling-guide.md", "probe": "labelling-guide-probe.md"}
GUIDE_FOLDERS = (HERE.parent / "docs", Path(sys.prefix) / "share" / "integritylab" / "docs")


@functools.cache
def guide_for(family: str) -> str:
    """The guide's text, read once per process: it is shown on every review page and does not change."""
    name = GUIDES.get(family, GUIDES["dilemma"])
    for folder in GUIDE_FOLDERS:
        if (folder / name).is_file():
            return (folder / name).read_text(encoding="utf-8")
    return f"The labelling guide ({name}) is not installed here; it is docs/{name} in the project's repository."


@functools.cache
def guide_html(family: str) -> str:
    """The guide rendered (and sanitised) once per process, not on every review page."""
    return report_html(guide_for(family))


class SignedInUser(Protocol):
    """The signed-in browser user as the app's session layer knows them (read-only)."""

    @property
    def user_id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def csrf_token(self) -> str: ...


class QueueBackend(Protocol):
    def signed_in(self, request: Request) -> SignedInUser | None: ...
    def next_item(self, user: SignedInUser, queue: str | None) -> str | None: ...
    def view(self, user: SignedInUser, assignment_id: str, window: EventWindow | None = None) -> ItemView: ...
    def file(self, user: SignedInUser, assignment_id: str, name: str) -> bytes: ...
    def commit(self, user: SignedInUser, assignment_id: str, label: str, evidence: list[int], note: str) -> None: ...
    def submit(self, user: SignedInUser, assignment_id: str, label: str,
               answers: dict[str, ChecklistAnswer], note: str) -> None: ...
    def skip(self, user: SignedInUser, assignment_id: str, reason: str) -> None: ...
    def renew(self, user: SignedInUser, assignment_id: str) -> datetime: ...
    def agreement(self, queue: str | None) -> tuple[AgreementReport, list[JudgeAgreement]]: ...
    def disagreements(self, queue: str | None, include_settled: bool) -> list[DisagreementRow]: ...
    def adjudication(self, item_id: int, window: EventWindow | None = None) -> AdjudicationView: ...
    def adjudication_file(self, item_id: int, name: str) -> bytes: ...
    def adjudicate(self, user: SignedInUser, item_id: int, label: str, reason: str) -> None: ...
    def export(self, queue: str | None) -> list[LabelRecord]: ...
    def import_labels(self, user: SignedInUser, records: list[LabelRecord], name: str) -> tuple[int, int]: ...


def parse_evidence(text: str) -> list[int]:
    """Event numbers from "12, 14 #e20" (the page's event links are ``#e<seq>``)."""
    numbers: list[int] = []
    for token in text.replace(",", " ").replace(";", " ").split():
        token = token.lstrip("#").removeprefix("e")
        if not token.isdigit():
            raise ValueError(f"evidence: {token!r} is not an event number (write e.g. 12, 14)")
        numbers.append(int(token))
    return numbers


EVENT_SEQ_MAX = 2**31 - 1  # event numbers are 32-bit in the database; a larger one is past the end


def window_of(after: int, until: int | None, find: str) -> EventWindow:
    def clamp(n: int) -> int:
        return max(-1, min(n, EVENT_SEQ_MAX))
    return EventWindow(after=clamp(after), until=None if until is None else clamp(until), find=find[:200])


def file_response(name: str, data: bytes) -> Response:
    """A collected file: figures and PDFs inline, anything else as a download; never run as a page."""
    lower = name.lower()
    if lower.endswith(INLINE_IMAGES):
        media, disposition = f"image/{'jpeg' if lower.endswith('.jpg') else lower.rsplit('.', 1)[1]}", "inline"
    elif lower.endswith(".pdf"):
        media, disposition = "application/pdf", "inline"
    else:
        media, disposition = "application/octet-stream", "attachment"
    safe = Path(name).name.replace('"', "")
    return Response(data, media_type=media, headers={
        "Content-Disposition": f'{disposition}; filename="{safe}"', "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "sandbox; default-src 'none'; img-src 'self'; object-src 'self'"})


def build_router(backend_of: Callable[[Request], QueueBackend], shared_templates: Path) -> APIRouter:
    templates = Jinja2Templates(directory=[HERE / "templates", shared_templates])
    templates.env.filters["report_html"] = report_html
    router = APIRouter(include_in_schema=False)

    def page(request: Request, name: str, context: dict, status: int = 200) -> Response:
        return templates.TemplateResponse(request, name, context, status_code=status)

    def refused(request: Request, user: SignedInUser, message: str, status: int) -> Response:
        return page(request, "annotate_message.html", {"user": user, "message": message}, status)

    def signed_in_or_redirect(request: Request) -> SignedInUser | Response:
        user = backend_of(request).signed_in(request)
        if user is None:
            return RedirectResponse(f"/login?next={request.url.path}", status_code=303)
        return user

    def csrf_ok(user: SignedInUser, token: str) -> bool:
        return bool(token) and hmac.compare_digest(token, user.csrf_token)

    @router.get("/annotate", response_class=HTMLResponse)
    def next_item(request: Request, queue: str | None = None) -> Response:
        user = signed_in_or_redirect(request)
        if isinstance(user, Response):
            return user
        try:
            assignment = backend_of(request).next_item(user, queue)
        except LookupError as exc:
            return refused(request, user, str(exc), 404)
        if assignment is None:
            return page(request, "annotate_message.html", {
                "user": user, "message": "Nothing to review right now: every item has its annotators. Check back later."})
        return RedirectResponse(f"/annotate/items/{assignment}", status_code=303)

    @router.get("/annotate/agreement", response_class=HTMLResponse)
    def agreement(request: Request, queue: str | None = None) -> Response:
        user = signed_in_or_redirect(request)
        if isinstance(user, Response):
            return user
        if user.role != "admin":  # agreement shows everyone's labels: never to an annotator
            return refused(request, user, "Admins only.", 403)
        result, judges = backend_of(request).agreement(queue)
        return page(request, "annotate_agreement.html", {"user": user, "r": result, "judges": judges,
                                                         "queue": queue})

    def admin_or_refusal(request: Request) -> SignedInUser | Response:
        user = signed_in_or_redirect(request)
        if isinstance(user, Response):
            return user
        if user.role != "admin":  # adjudication shows everyone's labels and the agent: never to an annotator
            return refused(request, user, "Admins only.", 403)
        return user

    @router.get("/annotate/adjudicate", response_class=HTMLResponse)
    def disagreements(request: Request, queue: str | None = None, all: str = "") -> Response:
        user = admin_or_refusal(request)
        if isinstance(user, Response):
            return user
        rows = backend_of(request).disagreements(queue, include_settled=bool(all))
        return page(request, "annotate_adjudicate_list.html", {"user": user, "rows": rows, "queue": queue,
                                                               "settled": bool(all)})

    @router.get("/annotate/adjudicate/{item_id}", response_class=HTMLResponse)
    def adjudication(request: Request, item_id: int, done: str = "") -> Response:
        user = admin_or_refusal(request)
        if isinstance(user, Response):
            return user
        try:
            shown = backend_of(request).adjudication(item_id)
        except LookupError:
            return refused(request, user, f"No queue item {item_id}.", 404)
        return page(request, "annotate_adjudicate.html", {"user": user, "v": shown, "done": bool(done),
                                                          "guide": guide_html(shown.family)})

    @router.post("/annotate/adjudicate/{item_id}")
    def adjudicate(request: Request, item_id: int, csrf_token: Annotated[str, Form()] = "",
                   label: Annotated[str, Form(max_length=40)] = "",
                   reason: Annotated[str, Form(max_length=5000)] = "") -> Response:
        user = admin_or_refusal(request)
        if isinstance(user, Response):
            return user
        if not csrf_ok(user, csrf_token):
            return refused(request, user, "Refused: the form carried no valid CSRF token. Nothing changed.", 403)
        try:
            backend_of(request).adjudicate(user, item_id, label, reason)
        except LookupError:
            return refused(request, user, f"No queue item {item_id}.", 404)
        except ValueError as exc:
            return page(request, "annotate_message.html", {
                "user": user, "message": f"Not saved: {exc}", "back": f"/annotate/adjudicate/{item_id}"}, 422)
        return RedirectResponse(f"/annotate/adjudicate/{item_id}?done=1", status_code=303)

    @router.get("/annotate/exchange", response_class=HTMLResponse)
    def exchange(request: Request, imported: str = "") -> Response:
        user = admin_or_refusal(request)
        if isinstance(user, Response):
            return user
        return page(request, "annotate_exchange.html", {"user": user, "imported": imported[:200]})

    @router.get("/annotate/export.{fmt}")
    def export(request: Request, fmt: str, queue: str | None = None) -> Response:
        user = admin_or_refusal(request)
        if isinstance(user, Response):
            return user
        if fmt not in ("csv", "jsonl"):
            return refused(request, user, "Export as .csv or .jsonl.", 404)
        text = dumps(backend_of(request).export(queue), format_of(Path(f"labels.{fmt}")))
        media = "text/csv" if fmt == "csv" else "application/x-ndjson"
        return PlainTextResponse(text, media_type=media,
                                 headers={"Content-Disposition": f'attachment; filename="labels.{fmt}"'})

    @router.post("/annotate/import")
    async def import_labels(request: Request) -> Response:
        user = admin_or_refusal(request)
        if isinstance(user, Response):
            return user
        form = await request.form()
        if not csrf_ok(user, str(form.get("csrf_token", ""))):
            return refused(request, user, "Refused: the form carried no valid CSRF token. Nothing changed.", 403)
        upload = form.get("file")
        if not isinstance(upload, UploadFile) or not upload.filename:
            return refused(request, user, "Choose a .csv or .jsonl file to import. Nothing changed.", 422)
        name = Path(upload.filename).name
        try:
            text = (await upload.read()).decode("utf-8")
            records = loads(text, format_of(Path(name)), name)
            added, unchanged = backend_of(request).import_labels(user, records, name)
        except (ExchangeError, UnicodeDecodeError) as exc:
            return page(request, "annotate_message.html", {
                "user": user, "message": f"Not imported: {exc}", "back": "/annotate/exchange"}, 422)
        return RedirectResponse(f"/annotate/exchange?imported={added}+added,+{unchanged}+unchanged", status_code=303)

    def events_fragment(request: Request, user: SignedInUser, load: Callable[[], ItemView | AdjudicationView],
                        base: str, find: str, missing: str, absent: type[LookupError] = LookupError) -> Response:
        """One window of a trajectory's events (the htmx paging and search of the viewer)."""
        try:
            shown = load()
        except absent:  # answered as if the item did not exist
            return refused(request, user, missing, 404)
        return page(request, "_events_fragment.html", {"v": shown, "base": base, "searched": bool(find)})

    def run_file(request: Request, user: SignedInUser, name: str, load: Callable[[], bytes],
                 missing: str) -> Response:
        try:
            return file_response(name, load())
        except LookupError:  # not theirs, no such file, or a blinded PDF before the blind label
            return refused(request, user, missing, 404)

    @router.get("/annotate/adjudicate/{item_id}/events", response_class=HTMLResponse)
    def adjudication_events(request: Request, item_id: int, after: int = -1, until: int | None = None,
                            find: str = "") -> Response:
        user = admin_or_refusal(request)
        if isinstance(user, Response):
            return user
        return events_fragment(
            request, user, lambda: backend_of(request).adjudication(item_id, window_of(after, until, find)),
            f"/annotate/adjudicate/{item_id}", find, f"No queue item {item_id}.")

    @router.get("/annotate/adjudicate/{item_id}/files/{name:path}")
    def adjudication_file(request: Request, item_id: int, name: str) -> Response:
        user = admin_or_refusal(request)
        if isinstance(user, Response):
            return user
        return run_file(request, user, name, lambda: backend_of(request).adjudication_file(item_id, name),
                        "No such file.")

    @router.get("/annotate/items/{assignment_id}/events", response_class=HTMLResponse)
    def item_events(request: Request, assignment_id: str, after: int = -1, until: int | None = None,
                    find: str = "") -> Response:
        user = signed_in_or_redirect(request)
        if isinstance(user, Response):
            return user
        return events_fragment(
            request, user, lambda: backend_of(request).view(user, assignment_id, window_of(after, until, find)),
            f"/annotate/items/{assignment_id}", find, "No such item among yours.", NotYours)

    @router.get("/annotate/items/{assignment_id}/files/{name:path}")
    def item_file(request: Request, assignment_id: str, name: str) -> Response:
        user = signed_in_or_redirect(request)
        if isinstance(user, Response):
            return user
        return run_file(request, user, name, lambda: backend_of(request).file(user, assignment_id, name),
                        "No such file among yours.")

    @router.get("/annotate/items/{assignment_id}", response_class=HTMLResponse)
    def item(request: Request, assignment_id: str, error: str = "") -> Response:
        user = signed_in_or_redirect(request)
        if isinstance(user, Response):
            return user
        try:
            shown = backend_of(request).view(user, assignment_id)
        except NotYours:
            return refused(request, user, "No such item among yours.", 404)
        return page(request, "annotate_item.html", {"user": user, "item": shown, "error": error[:300],
                                                    "guide": guide_html(shown.family)})

    def act(request: Request, assignment_id: str, token: str, action: Callable[[QueueBackend, SignedInUser], None],
            then: str | None = None) -> Response:
        user = signed_in_or_redirect(request)
        if isinstance(user, Response):
            return user
        if not csrf_ok(user, token):
            return refused(request, user, "Refused: the form carried no valid CSRF token. Nothing changed.", 403)
        try:
            action(backend_of(request), user)
        except NotYours:
            return refused(request, user, "No such item among yours.", 404)
        except LeaseError as exc:
            return refused(request, user, str(exc), 409)
        except ValueError as exc:
            return page(request, "annotate_message.html", {
                "user": user, "message": f"Not saved: {exc}", "back": f"/annotate/items/{assignment_id}"}, 422)
        return RedirectResponse(then or f"/annotate/items/{assignment_id}", status_code=303)

    @router.post("/annotate/items/{assignment_id}/commit")
    def commit(request: Request, assignment_id: str, csrf_token: Annotated[str, Form()] = "",
               label: Annotated[str, Form(max_length=40)] = "", evidence: Annotated[str, Form(max_length=2000)] = "",
               note: Annotated[str, Form(max_length=5000)] = "") -> Response:
        def do(backend: QueueBackend, user: SignedInUser) -> None:
            if not label:
                raise ValueError("label: choose one")
            backend.commit(user, assignment_id, label, parse_evidence(evidence), note)
        return act(request, assignment_id, csrf_token, do)

    @router.post("/annotate/items/{assignment_id}/submit")
    async def submit(request: Request, assignment_id: str) -> Response:
        form = await request.form()
        fields = {k: str(v) for k, v in form.items()}

        def do(backend: QueueBackend, user: SignedInUser) -> None:
            answers: dict[str, ChecklistAnswer] = {}
            for key, value in fields.items():
                if key.startswith("answer_"):
                    item_id = key.removeprefix("answer_")
                    answers[item_id] = ChecklistAnswer(answer=value, evidence=fields.get(f"evidence_{item_id}", ""))
            if not fields.get("label"):
                raise ValueError("final label: choose one")
            backend.submit(user, assignment_id, fields["label"], answers, fields.get("note", ""))
        return act(request, assignment_id, fields.get("csrf_token", ""), do, then="/annotate?done=1")

    @router.post("/annotate/items/{assignment_id}/skip")
    def skip(request: Request, assignment_id: str, csrf_token: Annotated[str, Form()] = "",
             reason: Annotated[str, Form(max_length=2000)] = "") -> Response:
        return act(request, assignment_id, csrf_token, lambda b, u: b.skip(u, assignment_id, reason), then="/annotate")

    @router.post("/annotate/items/{assignment_id}/renew")
    def renew(request: Request, assignment_id: str, csrf_token: Annotated[str, Form()] = "") -> Response:
        user = backend_of(request).signed_in(request)
        if user is None:
            return JSONResponse({"detail": "not signed in"}, status_code=401)
        if not csrf_ok(user, csrf_token):
            return JSONResponse({"detail": "no valid CSRF token; nothing changed"}, status_code=403)
        try:
            until = backend_of(request).renew(user, assignment_id)
        except NotYours:
            return JSONResponse({"detail": "no such item among yours"}, status_code=404)
        except LeaseError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=409)
        return JSONResponse({"lease_expires_at": until.isoformat()})

    return router


def static_files() -> StaticFiles:
    return StaticFiles(directory=HERE / "static")
