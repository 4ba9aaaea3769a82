"""The configuration of a signalling run: the frozen item set it rendered (its hash and
where it was), the rendering grid, and who chose (a model spec, a reference chooser with its
§I-K condition, or an imported population)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired

from typing_extensions import TypedDict

from choiceaudit.types import RunConfig

__all__ = ["ChatTemplateNote", "CoverageRecord", "SignallingConfig"]


class ChatTemplateNote(TypedDict):
    """The §I-J chat template chosen for a model (None: the plain prompt) and why."""

    chat_template: str | None
    why: str


class CoverageRecord(TypedDict):
    """An association chooser's §I-B coverage check as its run records it."""

    chooser: str
    n_items: int
    n_covered: int
    n_analysis_items: int
    n_analysis_covered: int
    uncovered_examples: list[str]
    #: True when --allow-partial-coverage let a chooser that misses items run; a run
    #: written before the field existed has none (read as False)
    partial_allowed: NotRequired[bool]


@dataclass(frozen=True)
class SignallingConfig(RunConfig):
    """``items_hash`` is the frozen item set's content hash (the analysis refuses a run whose
    items differ); ``conditions``, ``formats`` and ``label_forms`` the rendering grid;
    ``model`` a model's name (``batch_of`` / ``batch_rows`` for its batch-1 rerun) or
    ``chooser`` / ``condition`` a reference chooser's; ``chat_template_default`` the §I-J
    template chosen for a model and why; ``coverage`` an association chooser's coverage check."""

    instrument: str | None = "signalling"
    items_hash: str | None = None
    items_dir: str | None = None
    norms: str | None = None
    seed: int | None = None
    n_items: int | None = None
    conditions: tuple[str, ...] | None = None
    formats: tuple[str, ...] | None = None
    label_forms: tuple[str, ...] | None = None
    model: str | None = None
    batch_of: str | None = None
    batch_rows: int | None = None
    condition: str | None = None
    chat_template_default: ChatTemplateNote | None = None
    #: an association chooser's §I-B coverage check (items covered, and ``partial_allowed``
    #: when --allow-partial-coverage let a partial chooser run)
    coverage: CoverageRecord | None = None
