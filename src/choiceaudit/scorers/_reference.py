"""An independent float64 reference for the in-process causal-LM engine (``hf``).

Each option string is tokenized exactly as the engine tokenizes it (in place, by the scorer's
own renderer), and then scored by a path that shares nothing else with the engine: one
forward of the whole string at batch size 1 — no padding, no packing, no block cache, no
chunked output projection — through a float64 copy of the model (the model's own forward
projecting only the positions that are read, ``logits_to_keep``), the option's tokens read from
a float64 log-softmax. The signalling paper gates correctness this way (§I-J): reduced
precision moves scores by its noise floor, float32 must agree with float64 to rounding, and a
bug (a wrong mask, position or padding) would survive float32 at full magnitude.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from choiceaudit.errors import ScorerError
from choiceaudit.scorers._hf import HFScorer
from choiceaudit.scorers._tokenize import InPlace
from choiceaudit.types import FloatArray, Query

__all__ = ["has_reference", "reference_scores"]


def _option_logprob(model: Any, encoded: InPlace) -> float:
    import torch

    if encoded.first_scored < 1:
        raise ScorerError("an option whose first token starts the string has no context to score")
    ids = torch.tensor([list(encoded.ids)], dtype=torch.long, device=model.device)
    # the logits of the positions that predict the option's tokens, and of the last (which
    # predicts nothing): the model's own forward projects only those onto the vocabulary, as
    # a whole-string forward would compute them (Gemma 3's 262k-token head at every position
    # cost more than the rest of the reference)
    keep = len(encoded.ids) - encoded.first_scored + 1
    with torch.no_grad():
        try:
            logits = model(input_ids=ids, logits_to_keep=keep).logits[0]
        except TypeError:  # a forward without logits_to_keep projects every position
            logits = model(input_ids=ids).logits[0]
    logits = logits[-keep:]  # the last positions, whichever forward gave them
    logprobs = torch.log_softmax(logits.to(torch.float64), dim=-1)
    targets = ids[0, encoded.first_scored :]
    return float(logprobs[torch.arange(keep - 1, device=model.device), targets].sum())


def has_reference(scorer: Any) -> bool:
    """Whether ``scorer`` is the in-process engine, which the float64 reference re-computes
    (a causal LM asked for a key, ``lm-choice:``, reads another distribution: it has none)."""
    return isinstance(scorer, HFScorer)


def reference_scores(scorer: Any, queries: Sequence[Query]) -> list[dict[str, FloatArray]]:
    """The rules ``sum``, ``mean`` and (with a neutral state) ``pmi`` of every query, computed
    by the float64 reference path above from the tokens ``scorer`` (an ``hf`` scorer) would
    score. A copy of the model is held in float64 while it runs."""
    if not isinstance(scorer, HFScorer):
        raise ScorerError(
            "the float64 reference needs the in-process causal LM (hf: or a built-in causal LM), "
            f"not {type(scorer).__name__}"
        )
    import torch

    try:
        return _scores(scorer, copy.deepcopy(scorer.lm.model).to(torch.float64).eval(), queries)
    except ScorerError:  # a refusal of the input, already named
        raise
    except RuntimeError as exc:  # out of memory, or an operation with no float64 kernel
        raise ScorerError(
            f"the float64 reference could not run on {scorer.lm.model.device}: {exc}; check "
            "fewer queries (--n-reference) or on the CPU"
        ) from None


def _scores(scorer: Any, model: Any, queries: Sequence[Query]) -> list[dict[str, FloatArray]]:
    out: list[dict[str, FloatArray]] = []
    for query in queries:
        prompt, neutral = scorer._encode(query)
        sums = np.array([_option_logprob(model, e) for e in prompt], dtype=np.float64)
        lengths = np.array([e.n_scored for e in prompt], dtype=np.float64)
        scores = {"sum": sums, "mean": sums / lengths}
        if neutral:
            scores["pmi"] = sums - np.array(
                [_option_logprob(model, e) for e in neutral], dtype=np.float64
            )
        out.append(scores)
    return out
