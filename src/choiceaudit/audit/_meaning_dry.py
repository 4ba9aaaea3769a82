"""``choiceaudit run meaning --dry-run``: a plan's blocks, items, rows and calls, before anything
is paid for.

:func:`dry_run_meaning` builds exactly the plan :func:`~choiceaudit.audit.run_meaning` would score
(:func:`~choiceaudit.audit._meaning.build_meaning_plan`, same arguments) and counts it; it opens
no scorer and writes nothing. One row is one call per model (every query is sent once; retries
and a server's own probes are not counted). The capture matrix is counted apart from the other
blocks because the paper ran it as a job of its own (Appendix R, "The matrix run"): its "56,404
retained rows" of the commercial arm are the other five blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from choiceaudit.audit._meaning import DEFAULT_MEANING_EXPERIMENTS, build_meaning_plan
from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning import Corpus

__all__ = ["BlockVolume", "MeaningDryRun", "dry_run_meaning"]


@dataclass(frozen=True)
class BlockVolume:
    """One block of a plan: its experiment and test language, the items it asks, its rows
    (queries) and the calls they cost over every model."""

    block: str
    experiment: str
    language: str
    n_items: int
    n_rows: int
    n_calls: int


@dataclass(frozen=True)
class MeaningDryRun:
    """A plan's call volume (see the module docstring)."""

    models: tuple[str, ...]
    corpus: str
    design: str | None
    e7_keys: tuple[str, ...]
    blocks: tuple[BlockVolume, ...]

    @property
    def main_rows(self) -> int:
        """Rows of every block but the capture matrix."""
        return sum(b.n_rows for b in self.blocks if b.experiment != "matrix")

    @property
    def matrix_rows(self) -> int:
        return sum(b.n_rows for b in self.blocks if b.experiment == "matrix")

    @property
    def total_rows(self) -> int:
        return self.main_rows + self.matrix_rows

    @property
    def total_calls(self) -> int:
        return self.total_rows * len(self.models)


def dry_run_meaning(
    models: Sequence[str],
    *,
    corpus: str | Corpus = "idioms-en",
    experiments: Sequence[str] = DEFAULT_MEANING_EXPERIMENTS,
    n_items: int | None = None,
    n_order_items: int = 20,
    embedder: str = "auto",
    design: str | None = None,
    languages: Sequence[str] | None = None,
    matrix_items: int | None = None,
    e7_keys: Sequence[str] = ("slot",),
    split_seed: int | None = None,
) -> MeaningDryRun:
    """Count the plan :func:`~choiceaudit.audit.run_meaning` would score with ``models`` (its
    arguments, without the output directory and scorer options); nothing is scored or
    written.

    >>> plan = dry_run_meaning(["fake"], n_items=4, embedder="none")
    >>> [(b.block, b.n_items) for b in plan.blocks][:2]
    [('e1', 4), ('e2', 1)]
    """
    if not models:
        raise InputError("a dry run needs at least one model (--model)")
    loaded, plan, _ = build_meaning_plan(
        corpus,
        experiments=experiments,
        n_items=n_items,
        n_order_items=n_order_items,
        embedder=embedder,
        design=design,
        languages=languages,
        matrix_items=matrix_items,
        e7_keys=e7_keys,
        split_seed=split_seed,
    )
    blocks = []
    languages_of = {b["block"]: b["language"] for b in plan.config["blocks"]}
    for name, build in plan.builds.items():
        experiment = str(build.queries[0].meta["experiment"]) if build.queries else name
        n_rows = len(build.queries)
        blocks.append(
            BlockVolume(
                block=name,
                experiment=experiment,
                language=str(languages_of.get(name, loaded.language)),
                n_items=len({q.meta["item_id"] for q in build.queries}),
                n_rows=n_rows,
                n_calls=n_rows * len(models),
            )
        )
    return MeaningDryRun(
        models=tuple(models),
        corpus=loaded.name,
        design=design,
        e7_keys=tuple(e7_keys),
        blocks=tuple(blocks),
    )
