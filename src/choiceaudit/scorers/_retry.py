"""Retry bookkeeping the HTTP scorers share (``systemone``, ``openai``): jittered exponential
backoff that honours ``Retry-After``, and thread-safe call and failure counts."""

from __future__ import annotations

import random
import threading

__all__ = ["RetryBookkeeping"]


class RetryBookkeeping:
    """Mixin: the scorer sets ``backoff``, ``backoff_ceiling``, ``_rng``, ``_lock``,
    ``_counts`` and ``_failures`` in its constructor."""

    backoff: float
    backoff_ceiling: float
    _rng: random.Random
    _lock: threading.Lock
    _counts: dict[str, int]
    _failures: dict[str, int]

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """``backoff · 2^attempt`` with jitter in [0.5, 1), at least ``retry_after``, at most
        the ceiling."""
        with self._lock:
            jitter = 0.5 + 0.5 * self._rng.random()
        delay = min(self.backoff_ceiling, self.backoff * 2.0**attempt) * jitter
        if retry_after is not None:
            delay = max(delay, retry_after)
        return float(min(self.backoff_ceiling, delay))

    def _count(self, name: str) -> None:
        with self._lock:
            self._counts[name] += 1

    def _failure(self, kind: str) -> None:
        key = kind.split(":", 1)[0]
        with self._lock:
            self._failures[key] = self._failures.get(key, 0) + 1
