"""Scored meaning queries as columns: the one input every meaning analysis reads.

A row is one (query, decision) pair. Probabilities stay in **display** order with the permutation
beside them, and every outcome is read through the canonical identity the query recorded (the
gold at canonical 0, the literal gloss at canonical 1 where present), never through a slot letter
(docs/architecture.md, "Canonical identity"; the meaning paper, Appendix Q, "Recovering option identity").

Choices are tied *sets*: a row whose maximum is shared by ``t`` slots gives each of them credit
``1/t`` (:func:`choice_credit`), so accuracy and the literal attraction rate never depend on
array order.

Vectors are analysed **as returned**: ``raw`` is the model's own vector
(``Decision.scores["prob"]`` where the backend reports one, which the decision-model clients keep
unrounded and unrenormalised), and every choice, peak probability, p(gold)/p(literal) and the
permutation audit read it. ``probs`` is the same vector renormalised to Σ = 1 (the
:class:`~choiceaudit.types.Decision` contract); only the measures whose definition needs a
distribution (ECE, Brier, reliability bins, entropy, JS divergence) read ``probs``.
``reported_slot`` is the display slot of the ``choice`` the server returned (-1 where none).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import TypedDict

from choiceaudit import metrics, stats
from choiceaudit.types import Decision, FloatArray, IntArray, Query, parse_perm

__all__ = ["DecisionFields", "MeaningRows", "choice_credit", "decision_fields"]


def choice_credit(probs: FloatArray) -> FloatArray:
    """Per row and slot, the share of the choice the slot receives: ``1/t`` on each of the ``t``
    slots attaining the row maximum, 0 elsewhere (the toolkit's tie rule,
    :func:`choiceaudit.stats.tie_credit`)."""
    return stats.tie_credit(probs)


@dataclass(frozen=True)
class MeaningRows:
    """Columns of scored meaning queries (see the module docstring). ``literal_slot`` is -1 where
    the option list carries no literal gloss; ``conf_head`` is NaN where the model has no
    separate confidence head."""

    item_id: npt.NDArray[np.str_]
    experiment: npt.NDArray[np.str_]
    family: npt.NDArray[np.str_]
    condition: npt.NDArray[np.str_]
    language: npt.NDArray[np.str_]
    state: npt.NDArray[np.str_]
    perm: IntArray
    probs: FloatArray
    gold_slot: IntArray
    literal_slot: IntArray
    conf_head: FloatArray
    options: tuple[tuple[str, ...], ...]
    raw: FloatArray | None = None
    block: npt.NDArray[np.str_] | None = None
    identity: npt.NDArray[np.bool_] | None = None
    reported_slot: IntArray | None = None
    frequency: npt.NDArray[np.str_] | None = None
    seed_base: IntArray | None = None

    def __post_init__(self) -> None:
        n = self.probs.shape[0]
        defaults: dict[str, object] = {
            "raw": self.probs,
            "block": self.experiment,
            "identity": np.zeros(n, dtype=bool),
            "reported_slot": np.full(n, -1, dtype=np.int64),
            "frequency": np.full(n, "", dtype=np.str_),
            "seed_base": np.full(n, -1, dtype=np.int64),
        }
        for name, value in defaults.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        if self.raw.shape != self.probs.shape:  # type: ignore[union-attr]
            raise ValueError(f"raw shape {self.raw.shape} != probs shape {self.probs.shape}")  # type: ignore[union-attr]
        for name in (
            "item_id",
            "experiment",
            "family",
            "condition",
            "language",
            "state",
            "block",
            "identity",
            "reported_slot",
            "frequency",
            "seed_base",
        ):
            if getattr(self, name).shape != (n,):
                raise ValueError(
                    f"MeaningRows.{name} has {getattr(self, name).shape[0]} rows, not {n}"
                )
        if self.perm.shape != self.probs.shape:
            raise ValueError(f"perm shape {self.perm.shape} != probs shape {self.probs.shape}")

    def __len__(self) -> int:
        return int(self.probs.shape[0])

    @property
    def k(self) -> int:
        return int(self.probs.shape[1])

    @classmethod
    def from_decisions(cls, queries: Sequence[Query], decisions: Sequence[Decision]) -> MeaningRows:
        """Pair queries with their decisions (same order), checking each belongs to its query."""
        if len(queries) != len(decisions):
            raise ValueError(f"{len(queries)} queries but {len(decisions)} decisions")
        records = []
        for row, (query, decision) in enumerate(zip(queries, decisions, strict=True)):
            try:
                decision.check_against(query)
            except ValueError as exc:
                raise ValueError(f"row {row}: {exc}") from None
            meta = dict(query.meta)
            records.append(
                {
                    **meta,
                    "state": query.state,
                    "options": list(query.options),
                    "perm": query.perm if query.perm is not None else tuple(range(query.n_options)),
                    "probs": decision.probs,
                    **decision_fields(query, decision),
                }
            )
        return cls.from_records(records)

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]]) -> MeaningRows:
        """Rows from plain mappings (e.g. read back from a run store) with the keys ``item_id``,
        ``experiment``, ``family``, ``condition``, ``language``, ``state``, ``options``, ``perm``
        (string or sequence), ``probs``, ``gold_slot``, ``literal_slot`` (None if absent) and
        optionally ``conf_head``, ``raw`` (the vector as returned; default ``probs``),
        ``block``, ``identity_perturbation``, ``reported_slot``, ``frequency`` and
        ``seed_base``."""
        cols: dict[str, list[Any]] = {
            k: []
            for k in (
                "item_id",
                "experiment",
                "family",
                "condition",
                "language",
                "state",
                "perm",
                "probs",
                "gold_slot",
                "literal_slot",
                "conf_head",
                "options",
                "raw",
                "block",
                "identity",
                "reported_slot",
                "frequency",
                "seed_base",
            )
        }
        for row, rec in enumerate(records):
            try:
                perm = rec["perm"]
                perm = parse_perm(perm) if isinstance(perm, str) else tuple(int(p) for p in perm)
                cols["perm"].append(perm)
                cols["probs"].append(np.asarray(rec["probs"], dtype=np.float64))
                for key in ("item_id", "experiment", "family", "condition", "language", "state"):
                    cols[key].append(str(rec[key]))
                cols["gold_slot"].append(int(rec["gold_slot"]))
                lit = rec.get("literal_slot")
                cols["literal_slot"].append(-1 if lit is None else int(lit))
                head = rec.get("conf_head")
                cols["conf_head"].append(math.nan if head is None else float(head))
                cols["options"].append(tuple(rec["options"]))
                raw = rec.get("raw")
                cols["raw"].append(cols["probs"][-1] if raw is None else np.asarray(raw, float))
                cols["block"].append(str(rec.get("block") or rec["experiment"]))
                cols["identity"].append(bool(rec.get("identity_perturbation", False)))
                reported = rec.get("reported_slot")
                cols["reported_slot"].append(-1 if reported is None else int(reported))
                cols["frequency"].append(str(rec.get("frequency") or ""))
                seed = rec.get("seed_base")
                cols["seed_base"].append(-1 if seed is None else int(seed))
            except KeyError as exc:
                raise ValueError(f"record {row}: missing field {exc.args[0]!r}") from None
        if not cols["probs"]:
            raise ValueError("no rows to analyse")
        ks = {len(p) for p in cols["probs"]}
        if len(ks) != 1:
            raise ValueError(f"rows have different numbers of options: {sorted(ks)}")
        return cls(
            item_id=np.array(cols["item_id"], dtype=np.str_),
            experiment=np.array(cols["experiment"], dtype=np.str_),
            family=np.array(cols["family"], dtype=np.str_),
            condition=np.array(cols["condition"], dtype=np.str_),
            language=np.array(cols["language"], dtype=np.str_),
            state=np.array(cols["state"], dtype=np.str_),
            perm=np.array(cols["perm"], dtype=np.int64),
            probs=np.vstack(cols["probs"]),
            gold_slot=np.array(cols["gold_slot"], dtype=np.int64),
            literal_slot=np.array(cols["literal_slot"], dtype=np.int64),
            conf_head=np.array(cols["conf_head"], dtype=np.float64),
            options=tuple(cols["options"]),
            raw=np.vstack(cols["raw"]).astype(np.float64),
            block=np.array(cols["block"], dtype=np.str_),
            identity=np.array(cols["identity"], dtype=bool),
            reported_slot=np.array(cols["reported_slot"], dtype=np.int64),
            frequency=np.array(cols["frequency"], dtype=np.str_),
            seed_base=np.array(cols["seed_base"], dtype=np.int64),
        )

    def select(self, mask: npt.NDArray[np.bool_]) -> MeaningRows:
        idx = np.flatnonzero(mask)
        return MeaningRows(
            item_id=self.item_id[idx],
            experiment=self.experiment[idx],
            family=self.family[idx],
            condition=self.condition[idx],
            language=self.language[idx],
            state=self.state[idx],
            perm=self.perm[idx],
            probs=self.probs[idx],
            gold_slot=self.gold_slot[idx],
            literal_slot=self.literal_slot[idx],
            conf_head=self.conf_head[idx],
            options=tuple(self.options[i] for i in idx),
            raw=self.raw_probs[idx],
            block=self.blocks[idx],
            identity=self.identity_rows[idx],
            reported_slot=self.reported[idx],
            frequency=self.frequencies[idx],
            seed_base=self.seeds[idx],
        )

    # -- typed views of the optional columns (always set after __post_init__) ----------------

    @property
    def raw_probs(self) -> FloatArray:
        assert self.raw is not None
        return self.raw

    @property
    def blocks(self) -> npt.NDArray[np.str_]:
        assert self.block is not None
        return self.block

    @property
    def identity_rows(self) -> npt.NDArray[np.bool_]:
        assert self.identity is not None
        return self.identity

    @property
    def reported(self) -> IntArray:
        assert self.reported_slot is not None
        return self.reported_slot

    @property
    def frequencies(self) -> npt.NDArray[np.str_]:
        assert self.frequency is not None
        return self.frequency

    @property
    def seeds(self) -> IntArray:
        assert self.seed_base is not None
        return self.seed_base

    def where(self, **equals: str) -> MeaningRows:
        """Rows whose columns equal the given values, e.g. ``where(experiment="e1", family="d-lit")``."""
        mask = np.ones(len(self), dtype=bool)
        for column, value in equals.items():
            mask &= getattr(self, column) == value
        return self.select(mask)

    # -- per-row outcomes -------------------------------------------------------------------

    @property
    def credit(self) -> FloatArray:
        return choice_credit(self.raw_probs)

    @property
    def correct(self) -> FloatArray:
        """Credit on the gold option (1, 0, or 1/t under a t-way tie): the shared metrics' gold
        credit, on the vector as returned."""
        return metrics.gold_credit(self.raw_probs, self.gold_slot)

    @property
    def captured(self) -> FloatArray:
        """Credit on the literal option (0 where there is none): the LAR indicator of §4.2."""
        rows = np.arange(len(self))
        has = self.literal_slot >= 0
        out = np.zeros(len(self))
        out[has] = self.credit[rows[has], self.literal_slot[has]]
        return out

    @property
    def peak(self) -> FloatArray:
        """The maximum probability as returned, the confidence every arm defines (Appendix A)."""
        return np.asarray(self.raw_probs.max(axis=1), dtype=np.float64)

    @property
    def has_reported_choice(self) -> npt.NDArray[np.bool_]:
        return np.asarray(self.reported >= 0)

    @property
    def choice_is_argmax(self) -> npt.NDArray[np.bool_]:
        """Whether the returned ``choice`` is in the tied argmax of the returned vector (True
        where the server returned no choice)."""
        rows = np.arange(len(self))
        slot = np.where(self.reported >= 0, self.reported, 0)
        ok = self.credit[rows, slot] > 0
        return np.asarray(np.where(self.reported >= 0, ok, True))

    @property
    def correct_on_choice(self) -> FloatArray:
        """1 where the returned ``choice`` is the gold option (the argmax credit where there
        is no returned choice): accuracy as a deployed system acting on ``choice`` sees it."""
        return np.where(self.reported >= 0, (self.reported == self.gold_slot) * 1.0, self.correct)

    @property
    def captured_on_choice(self) -> FloatArray:
        has = self.literal_slot >= 0
        on_choice = (self.reported == self.literal_slot) & has
        return np.where(self.reported >= 0, on_choice * 1.0, self.captured)

    @property
    def p_gold(self) -> FloatArray:
        """The returned probability on the gold option (Table 1, mean p(gold))."""
        return np.asarray(self.raw_probs[np.arange(len(self)), self.gold_slot], dtype=np.float64)

    @property
    def p_literal(self) -> FloatArray:
        """The returned probability on the literal option (NaN where there is none)."""
        rows = np.arange(len(self))
        has = self.literal_slot >= 0
        out = np.full(len(self), np.nan)
        out[has] = self.raw_probs[rows[has], self.literal_slot[has]]
        return out

    @property
    def gold_canonical(self) -> IntArray:
        """The canonical index of each row's gold option, ``perm[gold_slot]`` (0 on every row
        the instrument builds; read, never assumed, by the analyses that need it)."""
        return np.asarray(self.perm[np.arange(len(self)), self.gold_slot], dtype=np.int64)

    @property
    def canonical_choice(self) -> IntArray:
        """Canonical option of the unique argmax, -1 for a tied row (:attr:`tied` counts them)."""
        credit = self.credit
        unique = credit.max(axis=1) == 1.0
        slot = credit.argmax(axis=1)
        out = self.perm[np.arange(len(self)), slot]
        return np.where(unique, out, -1).astype(np.int64)

    @property
    def tied(self) -> npt.NDArray[np.bool_]:
        return np.asarray(self.credit.max(axis=1) < 1.0)

    @property
    def canonical_probs(self) -> FloatArray:
        """Probabilities mapped to canonical options: ``out[i, perm[i, s]] = probs[i, s]``."""
        out = np.empty_like(self.probs)
        rows = np.arange(len(self))[:, None]
        out[rows, self.perm] = self.probs
        return out

    @property
    def canonical_raw(self) -> FloatArray:
        """The returned vector mapped to canonical options (the permutation audit reads it)."""
        out = np.empty_like(self.raw_probs)
        rows = np.arange(len(self))[:, None]
        out[rows, self.perm] = self.raw_probs
        return out


class DecisionFields(TypedDict):
    """What a meaning row keeps of a decision beyond ``probs`` (see :func:`decision_fields`)."""

    raw: list[float] | None
    conf_head: float | None
    reported_slot: int | None


def decision_fields(query: Query, decision: Decision) -> DecisionFields:
    """What a meaning row keeps of a decision beyond ``probs``: the vector as returned
    (``scores["prob"]``, else ``probs``), the confidence head, and the display slot of the
    returned ``choice`` (``aux["reported_choice"]`` or sparrow's ``aux["choice_key"]``)."""
    raw = decision.scores.get("prob")
    choice = decision.aux.get("reported_choice", decision.aux.get("choice_key"))
    reported = list(query.keys).index(choice) if choice in query.keys else None
    head = decision.aux.get("conf_head")
    return {
        "raw": None if raw is None else np.asarray(raw, dtype=np.float64).tolist(),
        "conf_head": None if head is None else float(head),
        "reported_slot": reported,
    }
