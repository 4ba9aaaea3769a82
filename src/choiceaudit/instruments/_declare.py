"""What an instrument declares about itself, so the audit layer and the report need no list of
instrument names to match: its name (the ``instrument`` its runs record), its configuration
type, its planning entry point, how its run directories are named and how its arms are
analysed. Each instrument package exports one :class:`Instrument` as ``INSTRUMENT``;
``choiceaudit.audit`` keeps the table of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from choiceaudit.types import Arm, RunConfig

__all__ = ["Instrument", "run_dir_name"]

ConfigT = TypeVar("ConfigT", bound=RunConfig)
#: an instrument's planning function, with its own signature (what the run loop calls)
PlanT = TypeVar("PlanT", bound=Callable[..., object])

#: Characters kept in a run directory's name; every other run of characters becomes one ``-``.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def run_dir_name(label: str, prefix: str = "") -> str:
    """The one rule for naming a run directory after a model, chooser or population:
    ``prefix`` + the label with each run of characters outside ``[A-Za-z0-9._-]`` replaced by
    ``-`` (leading and trailing ``-`` removed; ``model`` when nothing is left), so
    ``lm-choice:smollm2`` is ``lm-choice-smollm2`` and a name never holds a path separator.
    (Signalling runs were named with ``_`` before: ``rsa:swow`` was ``rsa_swow``, now
    ``rsa-swow``; names of plain model and chooser names are unchanged.)"""
    return prefix + (_UNSAFE.sub("-", label).strip("-") or "model")


@dataclass(frozen=True)
class Instrument(Generic[ConfigT, PlanT]):
    """One instrument's declaration.

    ``name`` is what its runs record as ``config.instrument`` (``score`` for plain scoring
    runs, which record none); ``config_type`` reads and writes that configuration exactly;
    ``plan`` is its planning entry point, the one the run loop calls (its own signature, kept
    in the declaration's type so a call type-checks: items or a corpus in, a plan of queries
    out); ``run_prefix`` starts the name of each run directory it makes under an output root
    (:meth:`run_dir`); ``analyse`` turns its arms into the typed results the report lays out
    (one or several). ``layouts`` gives, per result type its analysis returns, the function
    laying out every result of that type as report sections (``choiceaudit.report.Section``);
    the built-in instruments' layouts are the report package's own, a plug-in declares its
    own here."""

    name: str
    config_type: type[ConfigT]
    analyse: Callable[[Sequence[Arm[ConfigT]]], Sequence[object]]
    plan: PlanT
    run_prefix: str = ""
    layouts: Mapping[type, Callable[[Sequence[Any]], Sequence[object]]] = field(
        default_factory=dict
    )

    def run_dir(self, out_root: Path | str, label: str) -> Path:
        """``out_root / (run_prefix + run_dir_name(label))``."""
        return Path(out_root) / run_dir_name(label, self.run_prefix)

    def read_config(self, arm: Arm) -> Arm[ConfigT]:
        """``arm`` with its configuration read as this instrument's type."""
        return arm.with_config(self.config_type)

    def analyse_arms(self, arms: Sequence[Arm]) -> list[object]:
        """The instrument's analyses of ``arms`` (their configurations read as its type)."""
        return list(self.analyse([self.read_config(a) for a in arms]))
