"""One exception hierarchy for choiceaudit (after httpx's ``_exceptions.py``).

Callers catch :class:`ChoiceAuditError`; the command line turns it into a one-line message, and
any other exception is a bug that shows its traceback. The four branches say where the problem
lies:

* :class:`InputError` — something the user gave is unusable: a query file, a corpus, norms, an
  option value. ``source``/``row``/``field`` name the place when it is known.
* :class:`ScorerError` — a model backend failed or is missing.
* :class:`StoreError` — a run directory is unusable as asked (wrong scorer, corrupt part, locked).
* :class:`AnalysisError` — the rows cannot support the analysis asked for (mismatched items, an
  unpaired comparison).

This module imports nothing from the package, so every layer may raise these.
"""

from __future__ import annotations

__all__ = [
    "AnalysisError",
    "ChoiceAuditError",
    "InputError",
    "ScorerError",
    "StoreError",
    "located",
    "unreadable",
]


class ChoiceAuditError(Exception):
    """Base of every error choiceaudit raises on purpose."""


class InputError(ChoiceAuditError, ValueError):
    """Unusable user input. Subclasses ``ValueError`` so older ``except ValueError`` still work."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        row: int | str | None = None,
        field: str | None = None,
    ) -> None:
        self.source = source
        self.row = row
        self.field = field
        super().__init__(located(message, source=source, row=row, field=field))


class ScorerError(ChoiceAuditError, RuntimeError):
    """A model backend failed, refused its input, or is not installed.

    ``query_id`` names the query the failure concerns, when there is one. A backend knows only
    the query (its id is a content hash, and ``meta`` is part of that hash, so an input line
    number cannot travel inside it); whoever read the query from a file knows the line, and
    calls :meth:`locate` before re-raising, so the message starts ``file:line:`` like every other
    error naming a place (``ReadResult.locate`` does this for query files).
    """

    def __init__(self, message: str, *, query_id: str | None = None) -> None:
        super().__init__(message)
        self.query_id = query_id
        self.location: str | None = None

    def locate(self, source: str, row: int | str | None = None) -> None:
        """Name the input the failing query came from (``source``, ``row``) in the message."""
        self.location = ":".join(str(p) for p in (source, row) if p is not None)

    def __str__(self) -> str:
        text = super().__str__()
        return f"{self.location}: {text}" if self.location else text


class StoreError(ChoiceAuditError, RuntimeError):
    """A run directory is unusable as asked (wrong scorer, corrupt part, locked, missing)."""


class AnalysisError(ChoiceAuditError, ValueError):
    """The rows cannot support the analysis asked for."""


def located(
    message: str,
    *,
    source: str | None = None,
    row: int | str | None = None,
    field: str | None = None,
) -> str:
    """``source:row: field: message`` with the parts that are known (the format every error
    naming a place uses, so a user can copy the location)."""
    where = ":".join(str(p) for p in (source, row) if p is not None)
    parts = [p for p in (where, field) if p]
    return ": ".join([*parts, message]) if parts else message


def unreadable(
    path: object, exc: BaseException, *, what: str = "the file", fix: str | None = None
) -> InputError:
    """The :class:`InputError` for a file that could not be read as text: missing, a directory,
    not permitted, or not UTF-8 (``exc`` is the ``OSError`` or ``UnicodeDecodeError`` raised).
    Callers raise it ``from None``, so the command line shows one line naming ``path``, what
    was wrong with it and ``fix`` (what to do) where given."""
    if isinstance(exc, UnicodeDecodeError):
        why = f"is not UTF-8 text (byte {exc.start}: {exc.reason}); save {what} as UTF-8"
    elif isinstance(exc, FileNotFoundError):
        why = f"does not exist; give the path of {what}"
    elif isinstance(exc, IsADirectoryError):
        why = f"is a directory, not {what}; give the file's path"
    elif isinstance(exc, NotADirectoryError):
        why = f"is not a directory (a part of the path is a file); give {what}"
    elif isinstance(exc, OSError):
        why = f"cannot be read ({exc.strerror or exc})"
    else:
        why = f"cannot be read ({exc})"
    return InputError(f"{why}; {fix}" if fix else why, source=str(path))
