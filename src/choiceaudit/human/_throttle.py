"""Throttling the study app by what a client cannot rotate.

A cookie is the client's to choose, so nothing here is keyed on one. Three limits, each a token
bucket per key in a table of bounded size (:class:`KeyedLimiter`):

* every request, per client address (``rate`` a second on average, bursts of ``burst``);
* enrolment — a consent that creates a participant — per client address: ``enrol_limit`` at
  once, refilled at ``enrol_limit`` per ``enrol_window`` seconds, so one address cannot fill
  ``max_participants`` by inventing panel ids;
* consent and resume-code attempts per panel id: ``id_limit`` per ``id_window`` seconds, so a
  resume code cannot be guessed for one id from many addresses.

An IPv6 client is keyed by its /64 network (``ipv6_prefix``): a single host is commonly given
a whole /64 and can pick any address in it. The client address is the connection's peer unless
that peer is one of ``trusted_proxies`` (off by default): only then is ``X-Forwarded-For`` read,
from the right, skipping trusted proxies, so a client cannot name its own address.
"""

from __future__ import annotations

import hashlib
import ipaddress
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from choiceaudit.errors import InputError

__all__ = ["KeyedLimiter", "Limits", "client_key"]

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class KeyedLimiter:
    """A token bucket per key — ``rate`` tokens a second, at most ``burst`` — in a table of at
    most ``max_keys`` buckets. Keys are stored as 16-byte BLAKE2b digests, so the table's size
    does not depend on how long the keys are; past ``max_keys`` the least recently used bucket
    is dropped. A dropped bucket restarts full, which only matters to a client whose bucket was
    idle for longer than ``max_keys`` other clients' requests took."""

    def __init__(self, rate: float, burst: float, *, max_keys: int = 32_768) -> None:
        if not rate > 0 or not burst >= 1 or max_keys < 1:
            raise ValueError(
                f"a limiter needs rate > 0, burst >= 1 and max_keys >= 1 "
                f"(got rate={rate}, burst={burst}, max_keys={max_keys})"
            )
        self.rate = float(rate)
        self.burst = float(burst)
        self.max_keys = int(max_keys)
        self._buckets: OrderedDict[bytes, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._buckets)

    def table_bytes(self) -> int:
        """The memory the table holds now (the mapping, its keys and its buckets), by
        ``sys.getsizeof``: what a full table's bound in the human study guide is checked against."""
        with self._lock:
            entries = sum(
                sys.getsizeof(k) + sys.getsizeof(v) + sum(sys.getsizeof(x) for x in v)
                for k, v in self._buckets.items()
            )
            return sys.getsizeof(self._buckets) + entries

    def allow(self, key: str, *, now: float | None = None) -> float | None:
        """Take one token from ``key``'s bucket: None when the request may proceed, else the
        seconds until a token is there (nothing is taken then)."""
        digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        at = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.pop(digest, (self.burst, at))
            tokens = min(self.burst, tokens + max(0.0, at - last) * self.rate)
            wait = None if tokens >= 1.0 else (1.0 - tokens) / self.rate
            self._buckets[digest] = (tokens if wait is not None else tokens - 1.0, at)
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
            return wait


def _networks(values: Sequence[str]) -> tuple[_Network, ...]:
    nets = []
    for value in values:
        try:
            nets.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            raise InputError(
                f"not an IP address or network: {value!r} (e.g. 127.0.0.1, 10.0.0.0/8, ::1)",
                field="trusted_proxies",
            ) from None
    return tuple(nets)


@dataclass(frozen=True)
class Limits:
    """The study app's throttles (see the module docstring); every default is documented in
    the human study guide (docs/guides/human-study.md)."""

    rate: float = 10.0
    burst: int = 30
    enrol_limit: int = 5
    enrol_window: float = 3600.0
    id_limit: int = 10
    id_window: float = 600.0
    max_keys: int = 32_768
    ipv6_prefix: int = 64
    trusted_proxies: tuple[str, ...] = ()
    _nets: tuple[_Network, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "trusted_proxies", tuple(self.trusted_proxies))
        for name in ("rate", "burst", "enrol_limit", "enrol_window", "id_limit", "id_window"):
            if not getattr(self, name) > 0:
                raise InputError(f"{name} must be above 0 (got {getattr(self, name)})", field=name)
        if self.max_keys < 1 or not 1 <= self.ipv6_prefix <= 128:
            raise InputError(
                "max_keys must be at least 1 and ipv6_prefix between 1 and 128", field="limits"
            )
        object.__setattr__(self, "_nets", _networks(self.trusted_proxies))

    def requests(self) -> KeyedLimiter:
        return KeyedLimiter(self.rate, self.burst, max_keys=self.max_keys)

    def enrolments(self) -> KeyedLimiter:
        return KeyedLimiter(
            self.enrol_limit / self.enrol_window, self.enrol_limit, max_keys=self.max_keys
        )

    def per_panel_id(self) -> KeyedLimiter:
        return KeyedLimiter(self.id_limit / self.id_window, self.id_limit, max_keys=self.max_keys)

    def trusts(self, address: str) -> bool:
        ip = _ip(address)
        return ip is not None and any(ip in net for net in self._nets)


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def client_key(peer: str | None, forwarded_for: str | None, limits: Limits) -> str:
    """The key a request is throttled by: the client's address (an IPv6 one as its
    ``ipv6_prefix`` network). ``X-Forwarded-For`` is read only when the peer is a trusted proxy:
    the rightmost address in it that is not itself a trusted proxy is the client (the entries to
    its left were written by the client and prove nothing). A peer that is not an IP address (an
    in-process test client, a Unix socket) is keyed by its name."""
    address = peer or "?"
    if forwarded_for and limits.trusts(address):
        for hop in reversed(forwarded_for.split(",")):
            if _ip(hop) is None:
                break  # a malformed entry: keep the last address we could trust
            address = hop.strip()
            if not limits.trusts(address):
                break
    ip = _ip(address)
    if ip is None:
        return f"name:{address}"
    if isinstance(ip, ipaddress.IPv6Address):
        net = ipaddress.ip_network(f"{ip}/{limits.ipv6_prefix}", strict=False)
        return f"ip:{net}"
    return f"ip:{ip}"
