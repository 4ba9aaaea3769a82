"""The transport every HTTP backend shares (``openai``, ``systemone``): the API key, redaction,
the client, how a failed call is classified, the retry policy and the call counters.

A backend subclasses :class:`HTTPBackend` and writes only what is its own: the request body
and the parsing of an answer. Everything a server can do wrong on the wire is decided here,
once:

* **429, 5xx, timeouts, transport errors and bodies that break the format** are transient:
  retried with exponential backoff (``backoff · 2^attempt``, jitter in [0.5, 1), at most
  ``backoff_ceiling``; a ``Retry-After`` the server sends is honoured, capped at the ceiling).
* **A 4xx** other than 429 fails at once: the request itself is wrong and will be wrong again.
* **A 5xx that says it will recur** — status 501, or a body that names an assertion, an
  unsupported or unknown parameter, or a type or value error — is retried once (a server may
  be restarting), and fails with the server's own message if it comes back: a server that
  cannot take the request would otherwise be asked seven times per request.
* **An endpoint that never answered**: until the first HTTP response of the client's life
  (any status), a failure to connect (refused, a name that does not resolve, a connect
  timeout) is most likely a wrong ``base_url``. It is probed once more (one call, after the
  first backoff delay); when that fails too, every later call fails at once naming the base
  URL. Once the endpoint has answered, connection failures are retried like any transient one.

The API key is read from the environment variable ``api_key_env`` and sent as a bearer token.
It lives only in the client's headers and in :meth:`HTTPBackend.redact`, the one function
through which every string and structure a server reported passes before it is stored,
raised or counted: a server that echoes the key (in its model list, an error body, a model
name) never puts it into a manifest, a row, an exception or a log.
"""

from __future__ import annotations

import math
import os
import random
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import httpx
from typing_extensions import TypedDict

from choiceaudit.scorers._protocol import ScorerError

__all__ = ["HTTPBackend", "KeySecrecy", "Retryable", "recurs"]

T = TypeVar("T")

_REDACTED = "***"
_UNKNOWN, _ANSWERED, _UNREACHABLE = "unknown", "answered", "unreachable"

#: What in an error body says the same request will fail again, whatever the load.
_RECURRING = re.compile(
    r"assert|not (?:yet )?(?:supported|implemented)|unsupported|notimplemented|"
    r"unknown (?:parameter|field|argument)|unexpected keyword|extra[_ ](?:fields|inputs|forbidden)|"
    r"typeerror|valueerror|keyerror|attributeerror|only (?:supports|accepts) (?:a )?(?:one|single)|"
    r"only no \w+ is supported",
    re.IGNORECASE,
)


def recurs(status: int, body: str) -> bool:
    """Whether an error answer says it will recur: status 501, or a body naming an assertion,
    an unsupported or unknown parameter, or a Python type/value/key error."""
    return status == 501 or bool(_RECURRING.search(body))


class KeySecrecy(TypedDict):
    """What a manifest records of an API key: the variable it is read from and whether it was
    set (never the key)."""

    api_key_env: str
    api_key_present: bool


class Retryable(Exception):
    """A failed attempt that may succeed when tried again. ``connect``: no connection was
    made (the endpoint did not answer at all); ``recurring``: the server said it will fail
    again (its message is ``detail``)."""

    def __init__(
        self,
        kind: str,
        retry_after: float | None = None,
        *,
        connect: bool = False,
        recurring: bool = False,
        detail: str = "",
        answer: tuple[int, str] | None = None,
    ) -> None:
        super().__init__(kind)
        self.kind = kind
        self.retry_after = retry_after
        self.connect = connect
        self.recurring = recurring
        self.detail = detail
        #: (status, whole body) of an error that is not transient by its status: the same
        #: answer twice in a row means the server will give it again
        self.answer = answer


#: Statuses that say "try again later" whatever their body (rate limit, a gateway or proxy
#: between us and the server, overload): the same one twice is still worth retrying.
TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})


class HTTPBackend:
    """The shared transport of an HTTP backend; see the module docstring. ``label`` names the
    backend in messages; ``counters`` are the backend's call counts (``http_calls`` and
    ``retries`` are counted here, ``failed_counter`` when a call fails for good)."""

    label: ClassVar[str] = "http"
    failed_counter: ClassVar[str] = "failed"
    snippet: ClassVar[int] = 300

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str,
        max_retries: int,
        backoff: float,
        backoff_ceiling: float,
        timeout: float,
        transport: httpx.BaseTransport | None,
        sleep: Callable[[float], None],
        seed: int,
        counters: tuple[str, ...],
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.max_retries = max_retries
        self.backoff = backoff
        self.backoff_ceiling = backoff_ceiling
        self.timeout = timeout
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        api_key = os.environ.get(api_key_env) or None
        self._api_key_present = api_key is not None
        headers = {"content-type": "application/json"}
        if api_key is not None:
            headers["authorization"] = f"Bearer {api_key}"
        self._secret = api_key
        self._client = httpx.Client(
            headers=headers, timeout=httpx.Timeout(timeout), transport=transport
        )
        self._counts: dict[str, int] = dict.fromkeys(counters, 0)
        self._failures: dict[str, int] = {}
        # Whether the endpoint has ever answered; one thread at a time probes a silent one.
        self._reach = _UNKNOWN
        self._silent_connects = 0
        self._unreachable_reason = ""
        self._probe_lock = threading.Lock()

    def close(self) -> None:
        self._client.close()

    # -- secrecy -------------------------------------------------------------------------------

    def redact(self, value: T) -> T:
        """``value`` with the API key replaced by ``***`` in every string it holds (dict keys
        and values, list items, recursively); everything a server reported goes through here
        before it is stored or raised."""
        secret = self._secret
        if not secret:
            return value
        return _redact(value, secret)  # type: ignore[no-any-return]

    def secrecy(self) -> KeySecrecy:
        """The manifest's view of the key: where it comes from and whether it was set."""
        return {"api_key_env": self.api_key_env, "api_key_present": self._api_key_present}

    # -- bookkeeping ---------------------------------------------------------------------------

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """``backoff · 2^attempt`` with jitter in [0.5, 1), at least ``retry_after``, at most
        the ceiling."""
        with self._lock:
            jitter = 0.5 + 0.5 * self._rng.random()
        delay = min(self.backoff_ceiling, self.backoff * 2.0**attempt) * jitter
        if retry_after is not None:
            delay = max(delay, retry_after)
        return float(min(self.backoff_ceiling, delay))

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] = self._counts.get(name, 0) + n

    def _failure(self, kind: str) -> None:
        key = self.redact(kind.split(":", 1)[0])
        with self._lock:
            self._failures[key] = self._failures.get(key, 0) + 1

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def failures_by_kind(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._failures.items()))

    # -- one call, retried ---------------------------------------------------------------------

    def _call(
        self,
        attempt: Callable[[], T],
        exhausted: Callable[[str, int], ScorerError],
        where: str,
        *,
        max_retries: int | None = None,
        timeout_retries: int | None = None,
    ) -> T:
        """``attempt()`` under the retry policy (``max_retries`` overrides the backend's;
        ``timeout_retries`` bounds the retries of a timeout alone, for a probe that names the
        cause of a timeout itself). ``exhausted(last error, attempts made)`` is raised when the
        attempts are spent; ``where`` names what was asked for (a query, the model list) when
        the endpoint never answered."""
        retries = self.max_retries if max_retries is None else max_retries
        last = "no attempt"
        recurring = False
        previous: tuple[int, str] | None = None
        timeouts = 0
        for n in range(retries + 1):
            if n:
                self._count("retries")
            try:
                if self._reach == _ANSWERED:
                    return attempt()
                return self._attempt_unproven(attempt, where)
            except Retryable as exc:
                last = exc.kind
                self._failure(exc.kind)
                if exc.recurring and recurring:
                    self._count(self.failed_counter)
                    raise exhausted(
                        f"{exc.kind} twice, and the server says it will recur: "
                        f"{exc.detail!r} (not retried further: this server cannot take the "
                        "request)",
                        n + 1,
                    ) from None
                if exc.answer is not None and exc.answer == previous:
                    self._count(self.failed_counter)
                    raise exhausted(
                        f"{exc.kind} twice with the same answer {exc.detail!r} (a server error "
                        "that repeats itself is not transient: not retried further)",
                        n + 1,
                    ) from None
                recurring, previous = exc.recurring, exc.answer
                timeouts += exc.kind == "timeout"
                if timeout_retries is not None and timeouts > timeout_retries:
                    self._count(self.failed_counter)
                    raise exhausted(f"{exc.kind} {timeouts} times", n + 1) from None
                if n < retries:
                    self._sleep(self._delay(n, exc.retry_after))
        self._count(self.failed_counter)
        raise exhausted(last, retries + 1)

    def _attempt_unproven(self, attempt: Callable[[], T], where: str) -> T:
        """An attempt while the endpoint has never answered. Such calls go one at a time, so
        the first failure to connect is followed by exactly one more call (the probe); when
        that cannot connect either, this call and every later one fail at once."""
        with self._probe_lock:
            if self._reach == _UNREACHABLE:
                self._count(self.failed_counter)
                raise self._unreachable(where)
            if self._reach != _ANSWERED:
                try:
                    return attempt()
                except Retryable as exc:
                    if not exc.connect:
                        raise
                    with self._lock:
                        self._silent_connects += 1
                        if self._silent_connects == 1:
                            detail = f": {exc.detail}" if exc.detail else ""
                            self._unreachable_reason = f"{exc.kind}{detail}"
                        elif self._reach != _ANSWERED:
                            self._reach = _UNREACHABLE
                    if self._reach != _UNREACHABLE:
                        raise
                    self._failure(exc.kind)
                    self._count(self.failed_counter)
                    raise self._unreachable(where) from None
        return attempt()

    def _unreachable(self, where: str) -> ScorerError:
        return ScorerError(
            f"{self.label} endpoint {self.base_url} never answered in this session: "
            f"{self._unreachable_reason} on the first call and again on one probe, so nothing "
            f"more is sent ({where}); check base_url and that the server is running"
        )

    def _send(
        self, method: str, url: str, body: Mapping[str, object] | None, *, where: str = ""
    ) -> httpx.Response:
        """One HTTP exchange, classified: a transient failure raises :class:`Retryable`, a 4xx
        that will not change a :class:`ScorerError` (via :meth:`_rejected`); any other
        response is returned for the backend to parse. ``where`` (" for query q1") is put into
        the 4xx message."""
        self._count("http_calls")
        try:
            response = self._client.request(method, url, json=body)
        except httpx.ConnectTimeout as exc:
            raise Retryable("connect timeout", connect=True, detail=self.redact(str(exc))) from None
        except httpx.TimeoutException:
            raise Retryable("timeout") from None
        except httpx.ConnectError as exc:
            # connection refused, or a host name that does not resolve
            raise Retryable(
                f"transport error ({type(exc).__name__})",
                connect=True,
                detail=self.redact(str(exc)),
            ) from None
        except httpx.TransportError as exc:
            raise Retryable(f"transport error ({type(exc).__name__})") from None
        if self._reach != _ANSWERED:
            with self._lock:
                self._reach = _ANSWERED
        status = response.status_code
        if status < 400:
            return response
        # redact the whole body before cutting it to the snippet: a cut first could split
        # the key, and the part left would no longer match it
        text = self.redact(response.text)[: self.snippet]
        will_recur = recurs(status, response.text)
        if status == 429 or status >= 500:
            whole = self.redact(response.text)
            raise Retryable(
                f"HTTP {status}",
                _retry_after(response),
                recurring=will_recur,
                detail=text,
                answer=None if status in TRANSIENT_STATUSES else (status, whole),
            )
        self._failure(f"HTTP {status}")
        self._count(self.failed_counter)
        raise ScorerError(
            f"{self.label} {url} answered HTTP {status}{where} (not retried): {text!r}"
        )


def _redact(value: Any, secret: str) -> Any:
    if isinstance(value, str):
        return value.replace(secret, _REDACTED)
    if isinstance(value, dict):
        return {_redact(k, secret): _redact(v, secret) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_redact(v, secret) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, set | frozenset):
        return type(value)(_redact(v, secret) for v in value)
    return value


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
