"""The one rule for a panel id, applied where one enters the toolkit: the study link, consent,
withdrawal and the import of a study's responses.

A panel id is the whole string or nothing: letters, digits, ``_`` and ``-``, 1 to 64 characters
(Prolific's ``PROLIFIC_PID`` is 24 hex digits). Nothing is stripped, folded or mapped, so two
strings are one person exactly when they are equal: ``X`` and ``X`` followed by a newline, a
no-break space or a zero-width joiner are not two people, because only the first is a panel id
at all. Case is kept, as a panel may tell ``ab`` from ``AB``.
"""

from __future__ import annotations

import re

from choiceaudit.errors import InputError

__all__ = ["PANEL_ID_PATTERN", "PanelIdError", "normalise_panel_id"]

PANEL_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")  # always used with fullmatch


class PanelIdError(InputError):
    """A string that is not a panel id this study could have enrolled."""


def normalise_panel_id(
    value: object,
    *,
    source: str | None = None,
    row: int | str | None = None,
    field: str | None = None,
    hint: str = "",
) -> str:
    """``value`` as the panel id it is, or a :class:`PanelIdError` naming the place it came
    from (``hint``: what to do, appended). The id is returned unchanged: the rule refuses rather
    than repairs, so an id with an invisible character can never be matched to the visible
    one."""
    if isinstance(value, str) and PANEL_ID_PATTERN.fullmatch(value):
        return value
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    raise PanelIdError(
        f"not a panel id: {shown} (letters, digits, _ and -, 1 to 64 characters; nothing "
        "else, not even a trailing newline or an invisible character)"
        + (f"; {hint}" if hint else ""),
        source=source,
        row=row,
        field=field,
    )
