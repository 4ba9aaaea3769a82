"""The study app's pages and form handlers (the routing and middleware are ``_app``'s).

Imported only from :func:`~choiceaudit.human.create_app`, so Starlette and Jinja2 (the
``human`` extra) are needed only where a study is served.

Who may act as a participant: the holder of their session cookie (set at consent), or whoever
gives their panel id with the resume code shown to them once, at consent. The panel id alone
opens nothing: it is in the study link, which the panel, the participant's browser history and
anyone they share the link with all know. A browser without the session cookie that opens the
link gets the consent page whether or not the id is enrolled, with a form for the resume code;
a wrong code and an unknown id get the same refusal after the same work.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import jinja2
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from typing_extensions import TypedDict

from choiceaudit.human._assign import Trial, assign
from choiceaudit.human._db import Participant, ResponsesDB, WithdrawnError
from choiceaudit.human._panel_id import PanelIdError, normalise_panel_id
from choiceaudit.human._security import (
    ADMIN_TOKEN_ENV,
    SESSION_COOKIE,
    csrf_token,
    csrf_valid,
    new_resume_code,
    resume_code_matches,
    resume_digest,
    security_headers,
)
from choiceaudit.human._study import StudyItems, StudySpec
from choiceaudit.human._throttle import Limits

__all__ = ["PRE_COOKIE", "Refused", "StudyPages"]

PRE_COOKIE = "ca_pre"
MAX_BODY = 4096
MAX_RT_MS = 3_600_000
_DIGITS = re.compile(r"[0-9]{1,9}")

# One text for a resume that fails, whatever the reason (no such id, no code, a wrong code),
# so the refusal says nothing about whether the id is enrolled.
_NO_RESUME = (
    "That resume code does not open a session for this panel id. Check the code you were "
    "shown at consent, or open the study link in the browser you started in."
)
# Consent for an id that is already enrolled, from a browser without its session: the answer
# must differ from an enrolment (nothing is opened), and it says how to go on.
_ALREADY = (
    "This panel id has already consented. To continue, open the study link in the browser you "
    "started in, or enter the resume code you were shown at consent."
)


class Refused(Exception):
    """A request answered with a message page and ``status``; nothing was written."""

    def __init__(self, status: int, message: str, *, retry_after: float | None = None) -> None:
        self.status = status
        self.message = message
        self.retry_after = retry_after


def client_of(request: Request) -> str:
    """The throttling key the middleware computed for this request (its client address)."""
    return str(getattr(request.state, "client_key", "?"))


class _ItemPage(TypedDict):
    """What ``item.html`` shows for one trial: the form's token, progress, the item's
    instruction, state and options (with their display slots), the item's view and the
    attention check's option (``None`` on an ordinary trial)."""

    csrf: str
    position: int
    done: int
    n_trials: int
    percent: int
    instruction: str
    state: str
    view: Mapping[str, Any]
    instrument: str
    options: list[tuple[int, str]]
    check: str | None


class StudyPages:
    """Every page and form of one study, over its database and key."""

    def __init__(
        self,
        db: ResponsesDB,
        spec: StudySpec,
        items: StudyItems,
        secret: bytes,
        *,
        limits: Limits,
        secure_cookies: bool,
    ) -> None:
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        self.db, self.spec, self.items, self.secret = db, spec, items, secret
        self.queries = items.query_by_id()
        self.views = {i.item_id: i.view for i in items.items}
        self.enrolments = limits.enrolments()
        self.attempts = limits.per_panel_id()
        self.secure_cookies = secure_cookies
        self.admin_token = os.environ.get(ADMIN_TOKEN_ENV) or None

    # -- responses -------------------------------------------------------------------------
    def page(self, name: str, status: int = 200, **context: Any) -> Response:
        nonce = secrets.token_urlsafe(16)
        html = self.templates.get_template(name).render(
            title=self.spec.title, nonce=nonce, **context
        )
        return HTMLResponse(html, status_code=status, headers=security_headers(nonce))

    def refusal(self, exc: Refused) -> Response:
        response = self.page("message.html", exc.status, heading="Not accepted", text=exc.message)
        if exc.retry_after is not None:
            response.headers["Retry-After"] = str(int(exc.retry_after) + 1)
        return response

    def withdrawn(self) -> Response:
        return self.page(
            "message.html",
            410,
            heading="You have withdrawn",
            text="You have withdrawn from this study; nothing more is recorded. "
            "Thank you. You may close this page.",
        )

    def session_cookie(self, response: Response, who: Participant) -> Response:
        response.set_cookie(
            SESSION_COOKIE,
            who.token,
            httponly=True,
            samesite="strict",
            secure=self.secure_cookies,
        )
        return response

    def resume_at(self, who: Participant) -> Response:
        url = "/item" if who.started else "/instructions"
        return self.session_cookie(RedirectResponse(url, status_code=303), who)

    # -- reading a request -----------------------------------------------------------------
    async def form(self, request: Request) -> dict[str, str]:
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        if kind != "application/x-www-form-urlencoded":
            raise Refused(415, "Please submit the page's own form.")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                raise Refused(413, "The submission is too large.")
        try:
            fields = parse_qs(body.decode("ascii"), keep_blank_values=True, max_num_fields=8)
        except (UnicodeDecodeError, ValueError):
            raise Refused(400, "The submission could not be read.") from None
        if any(len(v) != 1 for v in fields.values()):
            raise Refused(400, "A field was sent more than once.")
        return {k: v[0] for k, v in fields.items()}

    async def own_session(self, request: Request) -> Participant | None:
        token = request.cookies.get(SESSION_COOKIE)
        return await run_in_threadpool(self.db.by_token, token) if token else None

    async def participant(self, request: Request) -> Participant:
        found = await self.own_session(request)
        if found is None:
            raise Refused(403, "Your session was not found. Please open the study link again.")
        return found

    def panel_id(self, raw: str | None) -> str:
        try:
            return normalise_panel_id(raw)
        except PanelIdError:
            raise Refused(400, "The panel id is missing or malformed.") from None

    def throttle(self, limiter_wait: float | None) -> None:
        if limiter_wait is not None:
            raise Refused(429, "Too many attempts. Please wait a while.", retry_after=limiter_wait)

    # -- the study link, consent and resume --------------------------------------------------
    async def entry(self, request: Request) -> Response:
        try:
            panel_id = normalise_panel_id(request.query_params.get(self.spec.panel_param, ""))
        except PanelIdError:
            return self.page(
                "message.html",
                400,
                heading="Study link incomplete",
                text="Please open the study through the link your panel gave you.",
            )
        if await run_in_threadpool(self.db.is_withdrawn, panel_id):
            return self.withdrawn()
        mine = await self.own_session(request)
        if mine is not None and mine.panel_id == panel_id:  # the return link, same browser
            return self.resume_at(mine)
        # the same page whether or not the id is enrolled: the id alone opens no session
        pre = request.cookies.get(PRE_COOKIE) or secrets.token_urlsafe(24)
        response = self.page(
            "consent.html",
            panel_id=panel_id,
            csrf=csrf_token(self.secret, pre, "consent"),
            resume_csrf=csrf_token(self.secret, pre, "resume"),
            n_trials=_n_trials(self.spec),
        )
        response.set_cookie(
            PRE_COOKIE, pre, httponly=True, samesite="strict", secure=self.secure_cookies
        )
        return response

    async def consent(self, request: Request) -> Response:
        try:
            fields = await self.form(request)
            pre = request.cookies.get(PRE_COOKIE)
            if not csrf_valid(self.secret, pre, "consent", fields.get("csrf")):
                raise Refused(403, "The form expired. Please open the study link again.")
            panel_id = self.panel_id(fields.get("panel_id"))
            if fields.get("consent") == "no":
                return self.page(
                    "message.html",
                    heading="Thank you",
                    text="You chose not to take part. Nothing was recorded. You may close this page.",
                )
            if fields.get("consent") != "yes":
                raise Refused(400, "Please choose whether you consent.")
            mine = await self.own_session(request)
            if mine is not None and mine.panel_id == panel_id:  # a resubmitted consent
                return self.resume_at(mine)
            self.throttle(self.attempts.allow(panel_id))
            return await self._enrol(request, panel_id)
        except Refused as exc:
            return self.refusal(exc)

    async def _enrol(self, request: Request, panel_id: str) -> Response:
        if await run_in_threadpool(self.db.by_panel_id, panel_id) is not None:
            raise Refused(403, _ALREADY)
        self.throttle(self.enrolments.allow(client_of(request)))
        code = new_resume_code()
        digest = resume_digest(self.secret, code)
        spec, items = self.spec, self.items
        try:
            who = await run_in_threadpool(
                self.db.enrol,
                panel_id,
                lambda k: assign(spec, items, k, panel_id),
                max_participants=spec.max_participants,
                resume_digest=digest,
            )
        except WithdrawnError:
            return self.withdrawn()
        if who is None:
            raise Refused(409, "This study is full. Thank you for your interest.")
        if who.resume_digest != digest:  # another browser enrolled this id a moment before
            raise Refused(403, _ALREADY)
        # the code is shown on this one page and never again: only its digest is stored
        return self.session_cookie(self._instructions(who, resume_code=code), who)

    async def resume(self, request: Request) -> Response:
        try:
            fields = await self.form(request)
            pre = request.cookies.get(PRE_COOKIE)
            if not csrf_valid(self.secret, pre, "resume", fields.get("csrf")):
                raise Refused(403, "The form expired. Please open the study link again.")
            panel_id = self.panel_id(fields.get("panel_id"))
            self.throttle(self.attempts.allow(panel_id))
            who = await run_in_threadpool(self.db.by_panel_id, panel_id)
            stored = who.resume_digest if who is not None else None
            if not resume_code_matches(self.secret, fields.get("code", ""), stored):
                raise Refused(403, _NO_RESUME)
            assert who is not None  # a match needs a stored digest
            return self.resume_at(who)
        except Refused as exc:
            return self.refusal(exc)

    # -- the study itself ---------------------------------------------------------------------
    def _instructions(self, who: Participant, *, resume_code: str | None = None) -> Response:
        first = self.items.items[0].renderings[0]
        return self.page(
            "instructions.html",
            csrf=csrf_token(self.secret, who.token, "start"),
            instruction=first.instruction,
            n_trials=who.n_trials,
            instrument=self.items.instrument,
            resume_code=resume_code,
        )

    async def instructions(self, request: Request) -> Response:
        try:
            who = await self.participant(request)
        except Refused as exc:
            return self.refusal(exc)
        if who.started:
            return RedirectResponse("/item", status_code=303)
        return self._instructions(who)

    async def start(self, request: Request) -> Response:
        try:
            who = await self.participant(request)
            fields = await self.form(request)
            if not csrf_valid(self.secret, who.token, "start", fields.get("csrf")):
                raise Refused(403, "The form expired. Please reload the page.")
            await run_in_threadpool(self.db.start, who)
            return RedirectResponse("/item", status_code=303)
        except Refused as exc:
            return self.refusal(exc)

    async def item(self, request: Request) -> Response:
        try:
            who = await self.participant(request)
        except Refused as exc:
            return self.refusal(exc)
        if not who.started:
            return RedirectResponse("/instructions", status_code=303)
        trial = await run_in_threadpool(self.db.current, who)
        if trial is None:
            return RedirectResponse("/done", status_code=303)
        done = await run_in_threadpool(self.db.progress, who)
        return self.page("item.html", **self._trial_context(trial, who, done))

    def _trial_context(self, trial: Trial, who: Participant, done: int) -> _ItemPage:
        q = self.queries[str(trial.query_id)]
        check = None if trial.check_option is None else q.options[trial.check_option]
        return {
            "csrf": csrf_token(self.secret, who.token, "answer"),
            "position": trial.position,
            "done": done,
            "n_trials": who.n_trials,
            "percent": round(100 * done / max(who.n_trials, 1)),
            "instruction": q.instruction,
            "state": q.state,
            "view": self.views.get(str(trial.item_id), {}),
            "instrument": self.items.instrument,
            "options": list(enumerate(q.options)),
            "check": check,
        }

    async def answer(self, request: Request) -> Response:
        try:
            who = await self.participant(request)
            fields = await self.form(request)
            if not csrf_valid(self.secret, who.token, "answer", fields.get("csrf")):
                raise Refused(403, "The form expired. Please reload the page.")
            if who.finished:
                raise Refused(409, "You have already finished the study. Thank you.")
            position = _integer(fields, "position", 0, who.n_trials - 1)
            trial = await run_in_threadpool(self.db.current, who)
            if trial is None:
                raise Refused(409, "You have already finished the study. Thank you.")
            if trial.position != position:
                raise Refused(409, "That page was already answered; continue from the current one.")
            n_options = self.queries[str(trial.query_id)].n_options
            slot = _integer(fields, "choice", 0, n_options - 1)
            rt = _integer(fields, "rt_ms", 0, MAX_RT_MS) if fields.get("rt_ms", "") else None
            outcome = await run_in_threadpool(self.db.answer, who, position, slot, rt)
            if outcome != "ok":
                raise Refused(409, "That page was already answered; continue from the current one.")
            return RedirectResponse("/item", status_code=303)
        except Refused as exc:
            return self.refusal(exc)

    async def done(self, request: Request) -> Response:
        try:
            who = await self.participant(request)
        except Refused as exc:
            return self.refusal(exc)
        if not who.finished:
            return RedirectResponse("/item" if who.started else "/instructions", status_code=303)
        code = self.spec.completion_code or _code(self.secret, who)
        return self.page("done.html", code=code)

    async def export(self, request: Request) -> Response:
        if self.admin_token is None:
            return PlainTextResponse("Not Found", status_code=404)
        given = request.headers.get("authorization", "")
        expected = f"Bearer {self.admin_token}"
        if not secrets.compare_digest(given.encode(), expected.encode()):
            return PlainTextResponse("Unauthorized", status_code=401)
        rows = await run_in_threadpool(self.db.export)
        return JSONResponse(
            {"study": self.spec.to_dict(), "items_hash": self.items.items_hash, "trials": rows},
            headers={"Cache-Control": "no-store"},
        )


def _integer(fields: Mapping[str, str], name: str, low: int, high: int) -> int:
    raw = fields.get(name)
    if raw is None or not _DIGITS.fullmatch(raw):
        raise Refused(400, f"The field {name} is missing or not a whole number.")
    value = int(raw)
    if not low <= value <= high:
        raise Refused(422, f"The field {name} is out of range.")
    return value


def _n_trials(spec: StudySpec) -> int:
    return sum(b.n_items for b in spec.blocks) + spec.attention_checks


def _code(secret: bytes, who: Participant) -> str:
    # a per-participant code when the study file gives none: checkable, not guessable
    return csrf_token(secret, who.token, "complete")[:12].upper()
