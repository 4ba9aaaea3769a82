"""The union of posting lists (the corpus entries sharing a word or a tag with an item) as a
sorted sequence, without building and sorting it when it is large.

The surface and semantic pools of an item are the sorted union of the posting lists of its
words (or tags). When a word is shared by a large part of the corpus, building that union as a
set and sorting it costs the corpus size per item, so a plan costs the square of the corpus. A
:class:`Postings` keeps each large posting list also as a bitset; the union of an item's lists
is then an OR of bitsets (64 entries per machine word, vectorised) plus the small lists' bits,
and the ``r``-th element — all a pool draw asks of a large pool — is found from cumulative bit
counts. The sequence holds exactly the elements, in exactly the order, of the sorted union, so
every draw, and so every plan, is the one the sorted list gives.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import overload

import numpy as np
import numpy.typing as npt

__all__ = ["LARGE_POSTING", "Postings", "SortedUnion"]

#: posting lists longer than this are also kept as bitsets (an item's union then costs an OR
#: per large list instead of one insertion per entry)
LARGE_POSTING = 1024

Bits = npt.NDArray[np.uint64]


class SortedUnion(Sequence[int]):
    """The sorted set of indices whose bits are set in ``bits`` (index ``j`` is bit ``j % 64``
    of word ``j // 64``)."""

    def __init__(self, bits: Bits) -> None:
        self._bits = bits
        self._counts = np.bitwise_count(bits)
        self._len = int(self._counts.sum())
        self._cumulative: npt.NDArray[np.int64] | None = None

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, r: int) -> int: ...
    @overload
    def __getitem__(self, r: slice) -> list[int]: ...

    def __getitem__(self, r: int | slice) -> int | list[int]:
        if isinstance(r, slice):
            return list(self)[r]
        if r < 0:
            r += self._len
        if not 0 <= r < self._len:
            raise IndexError(r)
        if self._cumulative is None:
            self._cumulative = np.cumsum(self._counts, dtype=np.int64)
        w = int(np.searchsorted(self._cumulative, r, side="right"))
        k = r - (int(self._cumulative[w - 1]) if w else 0)
        word = int(self._bits[w])
        for _ in range(k):  # clear the k lowest set bits
            word &= word - 1
        return w * 64 + (word & -word).bit_length() - 1

    def __iter__(self) -> Iterator[int]:
        flags = np.unpackbits(self._bits.astype("<u8").view(np.uint8), bitorder="little")
        return iter(np.flatnonzero(flags).tolist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SortedUnion | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-like equality, as a list's

    def __repr__(self) -> str:
        return f"SortedUnion({len(self)} entries)"


class Postings:
    """Posting lists (key → sorted entry indices) over ``n`` entries, the large ones also as
    bitsets, and the sorted union of any of them without an index."""

    def __init__(self, lists: Mapping[str, Sequence[int]], n: int) -> None:
        self.n = n
        self._words = (n + 63) // 64
        self._lists = {k: np.asarray(v, dtype=np.int64) for k, v in lists.items()}
        self._bits: dict[str, Bits] = {}
        for key, values in self._lists.items():
            if len(values) > LARGE_POSTING:
                self._bits[key] = self._set(np.zeros(self._words, dtype=np.uint64), values)

    def _set(self, bits: Bits, values: npt.NDArray[np.int64]) -> Bits:
        np.bitwise_or.at(
            bits, values >> 6, np.left_shift(np.uint64(1), (values & 63).astype(np.uint64))
        )
        return bits

    def union(self, keys: Iterable[str], without: int) -> list[int] | SortedUnion:
        """The sorted union of the lists of ``keys``, ``without`` left out: a list when every
        list is small, else a :class:`SortedUnion` (the same elements in the same order)."""
        keys = list(keys)
        large = [self._bits[k] for k in keys if k in self._bits]
        small = [self._lists[k] for k in keys if k not in self._bits]
        if not large:
            out = set(np.concatenate(small).tolist()) if small else set()
            out.discard(without)
            return sorted(out)
        bits = np.bitwise_or.reduce(large) if len(large) > 1 else large[0].copy()
        for values in small:
            self._set(bits, values)
        bits[without >> 6] &= ~np.uint64(1 << (without & 63))
        return SortedUnion(bits)
