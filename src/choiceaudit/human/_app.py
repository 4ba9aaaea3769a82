"""The web application people take part through (Starlette + Jinja2; issue 15 items 1, 2, 4).

Pages: ``/?<panel_param>=<id>`` (consent), ``/instructions``, ``/item`` (the current trial:
the item as a chooser sees it, then the tile's options and the forced-choice question, with
progress), ``/done`` (the completion code). Forms post to ``/consent``, ``/start`` and
``/answer``; every form carries a CSRF token and every field is validated on the server: a
choice must be a display slot of the participant's *current* trial. ``/admin/export`` returns
every trial and response as JSON to a bearer token read from the environment variable
:data:`ADMIN_TOKEN_ENV` (no variable: no admin route). Nothing else is served: no static files,
no directory, no other path.

Status codes of a refused submission (nothing is written): 400 malformed field, 403 missing
session or bad CSRF token, 409 not the current trial (a resubmission) or the participant has
finished, 413 body too large, 415 not a form, 422 a choice that is not a displayed option, 429
rate limited (with ``Retry-After``).

A panel id that withdrew (``choiceaudit withdraw-human``, without ``--erase``) is answered 410
Gone, at the study link and at consent, with a page saying that nothing more is recorded: the
refusal is permanent for that id (only an erasure lifts it), and 410 keeps it apart from the 403
of a missing session. Nothing is written, so it takes no place under ``max_participants`` and no
assignment index.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from choiceaudit.human._assign import Trial, assign
from choiceaudit.human._db import DB_FILE, Participant, ResponsesDB, WithdrawnError
from choiceaudit.human._security import RateLimiter, csrf_token, csrf_valid, security_headers
from choiceaudit.human._study import PANEL_ID_PATTERN, StudyItems, StudySpec

__all__ = ["ADMIN_TOKEN_ENV", "SESSION_COOKIE", "create_app"]

ADMIN_TOKEN_ENV = "CHOICEAUDIT_HUMAN_ADMIN_TOKEN"
SESSION_COOKIE = "ca_session"
PRE_COOKIE = "ca_pre"
MAX_BODY = 4096
MAX_RT_MS = 3_600_000
_DIGITS = re.compile(r"[0-9]{1,9}")

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message


def create_app(
    study_dir: Path | str,
    spec: StudySpec,
    items: StudyItems,
    secret: bytes,
    *,
    rate: float = 10.0,
    burst: int = 30,
    secure_cookies: bool = False,
    allowed_hosts: Sequence[str] | None = None,
) -> Starlette:
    """The study's application over ``<study_dir>/responses.sqlite``. Starlette, Jinja2 and
    uvicorn are the ``human`` extra, imported here so the rest of choiceaudit never needs
    them.

    ``allowed_hosts``: the Host header values the study answers (Starlette's
    ``TrustedHostMiddleware``: exact names, ``*.example.org``, or ``*`` for any); any other host
    gets 400 before a page is rendered, which keeps DNS-rebinding pages from reaching a study on
    loopback. None checks no host — for an application mounted behind a front end that does;
    :func:`~choiceaudit.human.serve` always passes a list."""
    import jinja2
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.responses import (
        HTMLResponse,
        JSONResponse,
        PlainTextResponse,
        RedirectResponse,
    )
    from starlette.routing import Route

    templates = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    db = ResponsesDB(Path(study_dir) / DB_FILE, secret=secret)
    queries = items.query_by_id()
    views = {i.item_id: i.view for i in items.items}
    limiter = RateLimiter(rate, burst)
    admin_token = os.environ.get(ADMIN_TOKEN_ENV) or None

    def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        nonce = secrets.token_urlsafe(16)
        html = templates.get_template(name).render(title=spec.title, nonce=nonce, **context)
        return HTMLResponse(html, status_code=status, headers=security_headers(nonce))

    def refusal(request: Request, exc: _Refused) -> Response:
        return page(request, "message.html", exc.status, heading="Not accepted", text=exc.message)

    def withdrawn(request: Request) -> Response:
        return page(
            request,
            "message.html",
            410,
            heading="You have withdrawn",
            text="You have withdrawn from this study; nothing more is recorded. "
            "Thank you. You may close this page.",
        )

    async def form(request: Request) -> dict[str, str]:
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        if kind != "application/x-www-form-urlencoded":
            raise _Refused(415, "Please submit the page's own form.")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                raise _Refused(413, "The submission is too large.")
        try:
            fields = parse_qs(body.decode("ascii"), keep_blank_values=True, max_num_fields=8)
        except (UnicodeDecodeError, ValueError):
            raise _Refused(400, "The submission could not be read.") from None
        if any(len(v) != 1 for v in fields.values()):
            raise _Refused(400, "A field was sent more than once.")
        return {k: v[0] for k, v in fields.items()}

    async def participant(request: Request) -> Participant:
        token = request.cookies.get(SESSION_COOKIE)
        found = await run_in_threadpool(db.by_token, token) if token else None
        if found is None:
            raise _Refused(403, "Your session was not found. Please open the study link again.")
        return found

    def session_redirect(url: str, who: Participant) -> Response:
        response = RedirectResponse(url, status_code=303)
        response.set_cookie(
            SESSION_COOKIE, who.token, httponly=True, samesite="strict", secure=secure_cookies
        )
        return response

    def integer(fields: Mapping[str, str], name: str, low: int, high: int) -> int:
        raw = fields.get(name)
        if raw is None or not _DIGITS.fullmatch(raw):
            raise _Refused(400, f"The field {name} is missing or not a whole number.")
        value = int(raw)
        if not low <= value <= high:
            raise _Refused(422, f"The field {name} is out of range.")
        return value

    # -- pages ------------------------------------------------------------------------------
    async def entry(request: Request) -> Response:
        panel_id = request.query_params.get(spec.panel_param, "")
        if not PANEL_ID_PATTERN.fullmatch(panel_id):
            return page(
                request,
                "message.html",
                400,
                heading="Study link incomplete",
                text="Please open the study through the link your panel gave you.",
            )
        known = await run_in_threadpool(db.by_panel_id, panel_id)
        if known is not None:  # a reconnect: resume where this participant was
            return session_redirect("/item" if known.started else "/instructions", known)
        if await run_in_threadpool(db.is_withdrawn, panel_id):
            return withdrawn(request)
        pre = request.cookies.get(PRE_COOKIE) or secrets.token_urlsafe(24)
        response = page(
            request,
            "consent.html",
            panel_id=panel_id,
            csrf=csrf_token(secret, pre, "consent"),
            n_trials=_n_trials(spec),
        )
        response.set_cookie(
            PRE_COOKIE, pre, httponly=True, samesite="strict", secure=secure_cookies
        )
        return response

    async def consent(request: Request) -> Response:
        try:
            fields = await form(request)
            if not csrf_valid(
                secret, request.cookies.get(PRE_COOKIE), "consent", fields.get("csrf")
            ):
                raise _Refused(403, "The form expired. Please open the study link again.")
            panel_id = fields.get("panel_id", "")
            if not PANEL_ID_PATTERN.fullmatch(panel_id):
                raise _Refused(400, "The panel id is missing or malformed.")
            if fields.get("consent") == "no":
                return page(
                    request,
                    "message.html",
                    heading="Thank you",
                    text="You chose not to take part. Nothing was recorded. You may close this page.",
                )
            if fields.get("consent") != "yes":
                raise _Refused(400, "Please choose whether you consent.")
            try:
                who = await run_in_threadpool(
                    db.enrol,
                    panel_id,
                    lambda k: assign(spec, items, k, panel_id),
                    max_participants=spec.max_participants,
                )
            except WithdrawnError:
                return withdrawn(request)
            if who is None:
                raise _Refused(409, "This study is full. Thank you for your interest.")
            return session_redirect("/item" if who.started else "/instructions", who)
        except _Refused as exc:
            return refusal(request, exc)

    async def instructions(request: Request) -> Response:
        try:
            who = await participant(request)
        except _Refused as exc:
            return refusal(request, exc)
        if who.started:
            return RedirectResponse("/item", status_code=303)
        first = items.items[0].renderings[0]
        return page(
            request,
            "instructions.html",
            csrf=csrf_token(secret, who.token, "start"),
            instruction=first.instruction,
            n_trials=who.n_trials,
            instrument=items.instrument,
        )

    async def start(request: Request) -> Response:
        try:
            who = await participant(request)
            fields = await form(request)
            if not csrf_valid(secret, who.token, "start", fields.get("csrf")):
                raise _Refused(403, "The form expired. Please reload the page.")
            await run_in_threadpool(db.start, who)
            return RedirectResponse("/item", status_code=303)
        except _Refused as exc:
            return refusal(request, exc)

    async def item(request: Request) -> Response:
        try:
            who = await participant(request)
        except _Refused as exc:
            return refusal(request, exc)
        if not who.started:
            return RedirectResponse("/instructions", status_code=303)
        trial = await run_in_threadpool(db.current, who)
        if trial is None:
            return RedirectResponse("/done", status_code=303)
        done = await run_in_threadpool(db.progress, who)
        return page(request, "item.html", **_trial_context(trial, who, done))

    def _trial_context(trial: Trial, who: Participant, done: int) -> dict[str, Any]:
        q = queries[str(trial.query_id)]
        check = None if trial.check_option is None else q.options[trial.check_option]
        return {
            "csrf": csrf_token(secret, who.token, "answer"),
            "position": trial.position,
            "done": done,
            "n_trials": who.n_trials,
            "percent": round(100 * done / max(who.n_trials, 1)),
            "instruction": q.instruction,
            "state": q.state,
            "view": views.get(str(trial.item_id), {}),
            "instrument": items.instrument,
            "options": list(enumerate(q.options)),
            "check": check,
        }

    async def answer(request: Request) -> Response:
        try:
            who = await participant(request)
            fields = await form(request)
            if not csrf_valid(secret, who.token, "answer", fields.get("csrf")):
                raise _Refused(403, "The form expired. Please reload the page.")
            if who.finished:
                raise _Refused(409, "You have already finished the study. Thank you.")
            position = integer(fields, "position", 0, who.n_trials - 1)
            trial = await run_in_threadpool(db.current, who)
            if trial is None:
                raise _Refused(409, "You have already finished the study. Thank you.")
            if trial.position != position:
                raise _Refused(
                    409, "That page was already answered; continue from the current one."
                )
            n_options = queries[str(trial.query_id)].n_options
            slot = integer(fields, "choice", 0, n_options - 1)
            rt_raw = fields.get("rt_ms", "")
            rt = integer(fields, "rt_ms", 0, MAX_RT_MS) if rt_raw else None
            outcome = await run_in_threadpool(db.answer, who, position, slot, rt)
            if outcome != "ok":
                raise _Refused(
                    409, "That page was already answered; continue from the current one."
                )
            return RedirectResponse("/item", status_code=303)
        except _Refused as exc:
            return refusal(request, exc)

    async def done(request: Request) -> Response:
        try:
            who = await participant(request)
        except _Refused as exc:
            return refusal(request, exc)
        if not who.finished:
            return RedirectResponse("/item" if who.started else "/instructions", status_code=303)
        return page(request, "done.html", code=spec.completion_code or _code(secret, who))

    async def export(request: Request) -> Response:
        if admin_token is None:
            return PlainTextResponse("Not Found", status_code=404)
        given = request.headers.get("authorization", "")
        expected = f"Bearer {admin_token}"
        if not secrets.compare_digest(given.encode(), expected.encode()):
            return PlainTextResponse("Unauthorized", status_code=401)
        rows = await run_in_threadpool(db.export)
        return JSONResponse(
            {"study": spec.to_dict(), "items_hash": items.items_hash, "trials": rows},
            headers={"Cache-Control": "no-store"},
        )

    routes = [
        Route("/", entry, methods=["GET"]),
        Route("/consent", consent, methods=["POST"]),
        Route("/instructions", instructions, methods=["GET"]),
        Route("/start", start, methods=["POST"]),
        Route("/item", item, methods=["GET"]),
        Route("/answer", answer, methods=["POST"]),
        Route("/done", done, methods=["GET"]),
        Route("/admin/export", export, methods=["GET"]),
    ]

    async def limit(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        client = request.client.host if request.client else "?"
        key = f"{client}|{request.cookies.get(SESSION_COOKIE, '')}"
        wait = limiter.allow(key)
        if wait is not None:
            return PlainTextResponse(
                "Too many requests", status_code=429, headers={"Retry-After": str(int(wait) + 1)}
            )
        response = await call_next(request)
        for name, value in security_headers("").items():
            response.headers.setdefault(name, value)
        return response

    middleware = [Middleware(BaseHTTPMiddleware, dispatch=limit)]
    if allowed_hosts is not None:
        if not allowed_hosts:
            raise ValueError("allowed_hosts is empty: no request could be answered")
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    app = Starlette(routes=routes, middleware=middleware)
    app.state.db = db
    return app


def _n_trials(spec: StudySpec) -> int:
    return sum(b.n_items for b in spec.blocks) + spec.attention_checks


def _code(secret: bytes, who: Participant) -> str:
    # a per-participant code when the study file gives none: checkable, not guessable
    return csrf_token(secret, who.token, "complete")[:12].upper()
