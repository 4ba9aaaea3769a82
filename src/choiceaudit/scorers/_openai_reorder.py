"""The ``openai`` scorer's order check: is the server's scoring of a text independent of the
other texts sent before and with it?

Prompt log-probabilities have been reported to depend on request order on
vLLM with prefix caching on (vllm issue 42019: cached prefix positions returned stale values).
For the first ``reorder_check`` queries the scorer scores, the same strings are sent again in
reversed order and every token's log-probability is compared; the largest difference, the
number of queries checked and the mismatches (over ``reorder_tolerance``) are recorded in the
manifest (``describe()["reorder_check"]``), and with ``reorder_action="error"`` (the default)
a mismatch stops the run: fix the server (``--no-enable-prefix-caching``) or accept the
recorded noise with ``reorder_action=record``. Strings that come back tokenized differently
the second time are another fault, and are named as such.

A mismatch, or a string tokenized differently the second time, raises
:class:`~._protocol.InconsistentServerError`: the run loop then keeps no row this server gave
in the scoring session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from choiceaudit.scorers._openai_wire import Tokens
from choiceaudit.scorers._protocol import InconsistentServerError

__all__ = ["ReorderCheck"]


class ReorderCheck:
    """The order check's sample, counts and comparison (shared by the scorer's threads)."""

    def __init__(self, base_url: str, sample: int, tolerance: float, action: str) -> None:
        self.base_url = base_url
        self.sample = sample
        self.tolerance = tolerance
        self.action = action
        self._lock = threading.Lock()
        self._counts = {"queries_checked": 0, "tokens_compared": 0, "mismatches": 0}
        self._max = 0.0

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {
                "sample": self.sample,
                **self._counts,
                "max_abs_diff": self._max,
                "tolerance": self.tolerance,
                "action": self.action,
            }

    def take(self, n_queries: int) -> int:
        """How many of the next ``n_queries`` queries to check (the sample not yet taken)."""
        with self._lock:
            left = self.sample - self._counts["queries_checked"]
            take = max(0, min(left, n_queries))
            self._counts["queries_checked"] += take
            return take

    def compare(
        self,
        first_id: str,
        requests: list[list[str]],
        scored: list[Tokens],
        request: Callable[[list[str]], list[Tokens]],
    ) -> None:
        """Send each request's strings again in reversed order and compare every token."""
        texts = [t for chunk in requests for t in chunk]
        first = scored[: len(texts)]
        again = [tok for chunk in requests for tok in request(chunk[::-1])[::-1]]
        worst, compared = 0.0, 0
        for text, a, b in zip(texts, first, again, strict=True):
            if a.spans != b.spans or [x is None for x in a.logprobs] != [
                y is None for y in b.logprobs
            ]:
                raise InconsistentServerError(
                    f"openai {self.base_url}: the same string sent again came back tokenized "
                    f"differently ({len(a.spans)} tokens, then {len(b.spans)}; "
                    f"{text[:60]!r}, query {first_id}): the server answers the same input "
                    "in two ways, so neither answer can be trusted",
                    query_id=first_id,
                )
            for x, y in zip(a.logprobs, b.logprobs, strict=True):
                if x is not None and y is not None:
                    worst = max(worst, abs(x - y))
                    compared += 1
        with self._lock:
            self._counts["tokens_compared"] += compared
            self._max = max(self._max, worst)
            mismatch = worst > self.tolerance
            if mismatch:
                self._counts["mismatches"] += 1
        if mismatch and self.action == "error":
            raise InconsistentServerError(
                f"openai {self.base_url}: the same strings sent again in reversed order got "
                f"log-probabilities up to {worst:.3g} apart (tolerance {self.tolerance}) "
                f"at query {first_id}: the server scored the same text differently the second "
                "time. Known causes are vLLM's prefix caching (vllm issue 42019: serve with "
                "--no-enable-prefix-caching) and kernels whose rounding depends on the batch "
                "in reduced precision (raise -o reorder_tolerance to the noise you accept); "
                "-o reorder_action=record keeps going and records the difference",
                query_id=first_id,
            )
