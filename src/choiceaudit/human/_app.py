"""The web application people take part through (Starlette + Jinja2).

Pages: ``/?<panel_param>=<id>`` (consent, with a form to resume by code), ``/instructions``,
``/item`` (the current trial: the item as a chooser sees it, then the tile's options and the
forced-choice question, with progress), ``/done`` (the completion code). Forms post to
``/consent``, ``/resume``, ``/start`` and ``/answer``; every form carries a CSRF token and every
field is validated on the server: a choice must be a display slot of the participant's
*current* trial. ``/admin/export`` returns every trial and response as JSON to a bearer token
read from the environment variable ``ADMIN_TOKEN_ENV`` of ``_security`` (no variable: no admin route).
Nothing else is served: no static files, no directory, no other path.

Status codes of a refused submission (nothing is written): 400 malformed field, 403 missing
session, bad CSRF token, an id already enrolled from a browser without its session, or a resume
code that does not match, 409 not the current trial (a resubmission) or the participant has
finished, 413 body too large, 415 not a form, 422 a choice that is not a displayed option, 429
throttled (with ``Retry-After``; see ``_throttle``).

A panel id that withdrew (``choiceaudit withdraw-human``, without ``--erase``) is answered 410
Gone, at the study link and at consent, with a page saying that nothing more is recorded: the
refusal is permanent for that id (only an erasure lifts it), and 410 keeps it apart from the 403
of a missing session. Nothing is written, so it takes no place under ``max_participants`` and no
assignment index.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from choiceaudit.human._db import DB_FILE, ResponsesDB
from choiceaudit.human._security import security_headers
from choiceaudit.human._study import StudyItems, StudySpec
from choiceaudit.human._throttle import Limits, client_key

__all__ = ["create_app"]

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response


def create_app(
    study_dir: Path | str,
    spec: StudySpec,
    items: StudyItems,
    secret: bytes,
    *,
    limits: Limits | None = None,
    secure_cookies: bool = False,
    allowed_hosts: Sequence[str] | None = None,
) -> Starlette:
    """The study's application over ``<study_dir>/responses.sqlite``. Starlette, Jinja2 and
    uvicorn are the ``human`` extra, imported here so the rest of choiceaudit never needs
    them.

    ``limits``: the throttles (:class:`~choiceaudit.human.Limits`; its defaults when None):
    requests per client address, enrolments per address and time window, consent and resume
    attempts per panel id, the table size, and the proxies whose ``X-Forwarded-For`` is
    believed (none by default).

    ``allowed_hosts``: the Host header values the study answers (Starlette's
    ``TrustedHostMiddleware``: exact names, ``*.example.org``, or ``*`` for any); any other host
    gets 400 before a page is rendered, which keeps DNS-rebinding pages from reaching a study on
    loopback. None checks no host — for an application mounted behind a front end that does;
    :func:`~choiceaudit.human.serve` always passes a list."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from choiceaudit.human._routes import StudyPages

    limits = limits or Limits()
    db = ResponsesDB(Path(study_dir) / DB_FILE, secret=secret)
    pages = StudyPages(db, spec, items, secret, limits=limits, secure_cookies=secure_cookies)
    requests = limits.requests()
    routes = [
        Route("/", pages.entry, methods=["GET"]),
        Route("/consent", pages.consent, methods=["POST"]),
        Route("/resume", pages.resume, methods=["POST"]),
        Route("/instructions", pages.instructions, methods=["GET"]),
        Route("/start", pages.start, methods=["POST"]),
        Route("/item", pages.item, methods=["GET"]),
        Route("/answer", pages.answer, methods=["POST"]),
        Route("/done", pages.done, methods=["GET"]),
        Route("/admin/export", pages.export, methods=["GET"]),
    ]

    async def limit(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        # keyed on the client's address alone: a cookie is the client's to rotate
        peer = request.client.host if request.client else None
        key = client_key(peer, request.headers.get("x-forwarded-for"), limits)
        request.state.client_key = key
        wait = requests.allow(key)
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
