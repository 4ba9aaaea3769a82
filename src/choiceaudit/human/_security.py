"""CSRF tokens, the withdrawal digest, rate limiting and the response headers every page
carries."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time

__all__ = ["RateLimiter", "csrf_token", "csrf_valid", "security_headers", "withdrawal_digest"]

# the label deriving the withdrawal key from the study key; it has no ":", so it is never the
# message of a CSRF token ("purpose:session") and the two uses of the study key stay apart
_WITHDRAWAL_KEY_LABEL = b"choiceaudit.human/withdrawn-panel-id/v1"


def csrf_token(secret: bytes, session: str, purpose: str) -> str:
    """The synchroniser token of a form: HMAC-SHA256 of the session (a participant's token or
    the consent page's pre-session cookie) and the form's purpose, under the study key."""
    return hmac.new(secret, f"{purpose}:{session}".encode(), hashlib.sha256).hexdigest()


def csrf_valid(secret: bytes, session: str | None, purpose: str, given: str | None) -> bool:
    if not session or not given:
        return False
    return hmac.compare_digest(csrf_token(secret, session, purpose), given)


def withdrawal_digest(secret: bytes, panel_id: str) -> str:
    """What a study keeps of a withdrawn panel id: HMAC-SHA256 of the id under a key derived
    from the study key for this purpose alone (HMAC of a fixed label). It cannot be turned back
    into the id, nor checked against a guessed id, without the study's ``secret`` file."""
    key = hmac.new(secret, _WITHDRAWAL_KEY_LABEL, hashlib.sha256).digest()
    return hmac.new(key, panel_id.encode(), hashlib.sha256).hexdigest()


class RateLimiter:
    """A token bucket per key (client address and session): ``rate`` requests a second on
    average, bursts of ``burst``. Buckets idle for ten minutes are dropped."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = float(rate)
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()
        self._swept = time.monotonic()

    def allow(self, key: str) -> float | None:
        """None when the request may proceed, else the seconds to wait."""
        now = time.monotonic()
        with self._lock:
            if now - self._swept > 600:
                self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 600}
                self._swept = now
            tokens, last = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                return (1.0 - tokens) / self.rate
            self._buckets[key] = (tokens - 1.0, now)
            return None


def security_headers(nonce: str) -> dict[str, str]:
    """No framing, no sniffing, no caching, nothing loaded from elsewhere: the only script and
    style are the page's own, carrying this response's nonce."""
    return {
        "Content-Security-Policy": (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }
