"""``choiceaudit serve-human`` (the human condition's web app) and ``choiceaudit import human``
(a study's responses into a run directory)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from choiceaudit import human
from choiceaudit.audit import import_human
from choiceaudit.cli._app import app, console, guarded, out, panel
from choiceaudit.cli._groups import import_app
from choiceaudit.human import ADMIN_TOKEN_ENV, Limits, parse_study_file

__all__: list[str] = []


@app.command("serve-human", rich_help_panel=panel("serve-human"))
@guarded
def serve_human(
    items: Annotated[
        Path,
        typer.Argument(
            help="A frozen signalling item directory (or a run holding one), or a meaning "
            "queries.jsonl."
        ),
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Study directory (created, or reopened to resume).")
    ],
    study: Annotated[
        Path | None,
        typer.Option(
            "--study",
            help="Study file (TOML): seed, blocks, attention checks; needed for a new study.",
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    rate: Annotated[
        float, typer.Option(help="Requests per second per client address (average).")
    ] = 10.0,
    burst: Annotated[int, typer.Option(help="Requests a client address may burst.")] = 30,
    enrol_limit: Annotated[
        int, typer.Option(help="Enrolments per client address per --enrol-window.")
    ] = 5,
    enrol_window: Annotated[float, typer.Option(help="Seconds (see --enrol-limit).")] = 3600.0,
    id_limit: Annotated[
        int, typer.Option(help="Consent and resume-code attempts per panel id per --id-window.")
    ] = 10,
    id_window: Annotated[float, typer.Option(help="Seconds (see --id-limit).")] = 600.0,
    trusted_proxy: Annotated[
        list[str] | None,
        typer.Option(
            "--trusted-proxy",
            help="Address or network of a reverse proxy whose X-Forwarded-For is believed "
            "(repeatable). Default: none; X-Forwarded-For is ignored.",
        ),
    ] = None,
    secure_cookies: Annotated[
        bool, typer.Option(help="Mark cookies Secure (behind HTTPS).")
    ] = False,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="A Host name the study answers (repeatable; '*.example.org', or '*' for "
            "any). Default: 127.0.0.1 and localhost on a loopback address; required on any "
            "other address. Other hosts get 400.",
        ),
    ] = None,
) -> None:
    """Serve a frozen item set to people in a browser.

    Consent, instructions, the items and a completion code; answers are kept in the study
    directory, and a second call reopens it. The admin export at /admin/export needs the
    token in $CHOICEAUDIT_HUMAN_ADMIN_TOKEN.

    Example:

    \b
      choiceaudit serve-human runs/sig/.items --study study.toml --out study
    """
    spec = parse_study_file(study) if study is not None else None
    admin = "on" if os.environ.get(ADMIN_TOKEN_ENV) else f"off (set {ADMIN_TOKEN_ENV})"

    def announce(hosts: Sequence[str]) -> None:  # once the study is open, never before
        console.print(
            f"serving {items} → {out_dir} on http://{host}:{port}/ (answering Host "
            f"{', '.join(hosts)}); admin export {admin}"
        )

    human.serve(  # looked up when the command runs, so a test can stand in for the server
        items,
        out_dir,
        spec,
        host=host,
        port=port,
        limits=Limits(
            rate=rate,
            burst=burst,
            enrol_limit=enrol_limit,
            enrol_window=enrol_window,
            id_limit=id_limit,
            id_window=id_window,
            trusted_proxies=tuple(trusted_proxy or ()),
        ),
        secure_cookies=secure_cookies,
        allowed_hosts=allowed_host,
        on_open=announce,
    )


@import_app.command("human")
@guarded
def import_human_cmd(
    study: Annotated[Path, typer.Argument(help="Study directory written by serve-human.")],
    out_dir: Annotated[Path, typer.Option("--out", help="New run directory.")],
    keep_failed_attention: Annotated[
        bool,
        typer.Option(help="Keep participants who failed an attention check (default: left out)."),
    ] = False,
    finished_only: Annotated[
        bool, typer.Option(help="Leave out participants who did not finish.")
    ] = False,
    label: Annotated[
        str, typer.Option(help="The arm's name in tables (distinct per study in one report).")
    ] = "people",
) -> None:
    """Import a study's responses as a run.

    People become one more arm beside the models in `choiceaudit report`; participants who
    failed an attention check are left out unless --keep-failed-attention.

    Example:

    \b
      choiceaudit import human study --out runs/people
    """
    result = import_human(
        study,
        out=out_dir,
        keep_failed_attention=keep_failed_attention,
        finished_only=finished_only,
        label=label,
        command=["choiceaudit", *sys.argv[1:]],
    )
    left = ", ".join(f"{n} {why}" for why, n in result.excluded.items() if n) or "none"
    out.print(
        f"{result.path}: {result.rows} renderings, {result.responses} responses from "
        f"{result.participants} participants; left out: {left}",
        highlight=False,
    )


@app.command("withdraw-human", rich_help_panel=panel("withdraw-human"))
@guarded
def withdraw_human(
    study: Annotated[Path, typer.Argument(help="Study directory written by serve-human.")],
    panel_id: Annotated[str, typer.Argument(help="The participant's panel id.")],
    erase: Annotated[
        bool,
        typer.Option(
            "--erase",
            help="Erasure request: keep no digest of the id either (it may then enrol again).",
        ),
    ] = False,
) -> None:
    """Withdraw one participant from a study.

    Deletes their row, trials and responses, and keeps a keyed digest of the panel id (not the
    id) so the same id is not enrolled again; --erase keeps nothing. Safe while the server
    runs. Runs imported before keep their copy: import again.

    Example:

    \b
      choiceaudit withdraw-human study P0123
    """
    from choiceaudit.human import withdraw

    done = withdraw(study, panel_id, erase=erase)
    if erase:
        parts = [f"{done.responses} response(s) deleted"] if done.found else []
        if done.was_blocked:
            parts.append("withdrawal digest deleted")
        out.print(
            f"{study}: {panel_id} erased ({', '.join(parts)}); nothing about this id is kept, "
            "so it may enrol again",
            highlight=False,
        )
    else:
        out.print(
            f"{study}: {panel_id} withdrawn: {done.responses} response(s) deleted; a keyed "
            "digest of the id is kept (not the id), so it cannot enrol again (--erase "
            "removes it)",
            highlight=False,
        )
    if not done.scrubbed:
        out.print(
            "warning: another connection kept the database busy, so its write-ahead log may "
            "hold earlier copies of the deleted rows until the next checkpoint",
            highlight=False,
        )
