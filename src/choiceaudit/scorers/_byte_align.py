"""Placing a server's token strings in the text when some tokens hold only part of a character.

A byte-level tokenizer splits a character outside ASCII (Bengali, CJK, an emoji, a currency
sign, a combining accent) into several tokens, and servers write the text of such a token in
one of three ways:

* **whole text** — each token's characters as the fast tokenizer's offsets give them
  (``choiceaudit serve-model``); :func:`._openai_wire.align_tokens` and ``text_offset`` place
  these, and this module is not needed;
* **empty, then the whole character** — current vLLM (``_correct_decoded_token`` in
  ``vllm/v1/engine/logprobs.py``, applied to prompt log-probabilities since early 2026): a token
  that ends inside a character comes back as ``""``, and the token that completes it comes back
  with the text of every byte since the last clean token, so ``Answer: 日本`` reads
  ``"" "" " 日" "本"``; a token that does not *end* inside a character is decoded on its own,
  so it can start with ``U+FFFD``;
* **each token decoded alone** — older vLLM and SGLang's ``/generate``
  (``detokenize_logprob_tokens`` in SGLang's tokenizer manager, one ``batch_decode`` per id):
  every incomplete piece of a character becomes ``U+FFFD``.

A client that reads ``""`` as a token of no width starts the option after it and loses the
log-probabilities of its first bytes; one that reads ``U+FFFD`` as a character cannot place
the token at all. This module reads both as what they are: a token covers a run of UTF-8
bytes of the text, and its string is what that server's rule writes for those bytes. It finds
every assignment of byte runs to tokens that reproduces all the strings under the rules above
(a small dynamic programme over token index and byte position) and reports, for each token,
every character span it can have — the characters its bytes touch, which is what a fast
tokenizer's offset mapping gives the ``hf`` scorer in process (in linear time where the strings
hold no ``U+FFFD``: each run of ``""`` tokens is read on the bytes of the token that completes it,
:func:`_whole_texts`). Where a token can have more than
one span, the caller decides whether that changes which tokens are scored and refuses if it
does (:func:`._tokenize._locate`).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ALONE", "EMPTY_THEN_WHOLE", "REPLACEMENT", "align_partial_tokens", "has_partial_tokens"]

REPLACEMENT = "\ufffd"
#: The two rules, by what the server writes for a token that holds part of a character.
EMPTY_THEN_WHOLE = "empty until the character completes (current vLLM)"
ALONE = "each token decoded alone (older vLLM, SGLang /generate)"

#: The most bytes a token written as ``""`` may hold: its own text before the incomplete
#: character (a long token is a few dozen bytes) and at most three bytes of that character.
_MAX_EMPTY_BYTES = 64

Span = tuple[int, int]
#: token index, its first byte, and the first byte of the token that holds the first byte of
#: the character its first byte belongs to (its own first byte when that starts a character)
_State = tuple[int, int, int]


def has_partial_tokens(tokens: Sequence[str | None]) -> bool:
    """Whether ``tokens`` have a token that can only be part of a character: one containing
    ``U+FFFD``, or ``""`` between two tokens with text (a zero-width special token is
    ``""`` only before the text or after it)."""
    if any(t is not None and REPLACEMENT in t for t in tokens):
        return True
    with_text = [i for i, t in enumerate(tokens) if t]
    return bool(with_text) and any(
        t == "" and with_text[0] < i < with_text[-1] for i, t in enumerate(tokens)
    )


def _lossy(data: bytes) -> str:
    # U+FFFD per maximal ill-formed subpart: what Rust's from_utf8_lossy (the `tokenizers`
    # decoder) and Python write alike
    return data.decode("utf-8", errors="replace")


class _Text:
    """The text's bytes, where each character starts, and which character holds each byte."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("utf-8")
        n = len(self.data)
        self.char_of: list[int] = []
        #: the first byte of the character each byte belongs to
        self.start_of: list[int] = []
        for k, ch in enumerate(text):
            width = len(ch.encode("utf-8"))
            self.char_of.extend([k] * width)
            self.start_of.extend([len(self.start_of)] * width)
        self.char_of.append(len(text))
        self.start_of.append(n)
        self.is_start = [self.start_of[b] == b for b in range(n + 1)]
        #: the first character start at or after each byte
        self.next_start = list(range(n + 1))
        for b in range(n - 1, -1, -1):
            if not self.is_start[b]:
                self.next_start[b] = self.next_start[b + 1]

    def owner(self, p: int, q: int, r: int) -> int:
        """The ``r`` of the token after bytes ``[p, q)`` of a token whose ``r`` is ``r``."""
        if self.is_start[q]:
            return q
        return p if self.start_of[q - 1] >= p else r

    def span(self, p: int, q: int) -> Span:
        """The characters the bytes ``[p, q)`` touch; zero-width where ``p == q``."""
        if p == q:
            return (self.char_of[p], self.char_of[p])
        return (self.char_of[p], self.char_of[q - 1] + 1)


def _moves(
    text: _Text, token: str | None, state: _State, rule: str, specials: bool = True
) -> list[tuple[int, int]]:
    """``(q, r)``: where the token can end under ``rule``, and the next state's ``r``
    (``specials``: whether the text's ends are the string's, where special tokens may stand)."""
    _i, p, r = state
    data, n = text.data, len(text.data)
    if token is None:  # unknown text (the first token of vLLM's prompt_logprobs)
        return [(q, q) for q in range(p, n + 1)]
    moves: list[tuple[int, int]] = []
    encoded = token.encode("utf-8")
    special = (
        specials
        and REPLACEMENT not in token
        and (
            (p == n and (token == "" or not data.endswith(encoded)))
            or (p == 0 and (token == "" or not data.startswith(encoded, p)))
        )
    )
    if special:  # a special token before the text or after it (never a piece of a character)
        moves.append((p, p))
    if token == "":
        if rule == EMPTY_THEN_WHOLE:  # ends inside a character (decoded alone, bytes are never "")
            top = min(n, p + _MAX_EMPTY_BYTES)
            moves.extend(
                (q, text.owner(p, q, r)) for q in range(p + 1, top + 1) if not text.is_start[q]
            )
        return moves
    # the text before the first U+FFFD is the decoding of the bytes the string starts at
    head = token.split(REPLACEMENT, 1)[0].encode("utf-8")
    top = min(n, p + len(encoded))
    if rule == ALONE:
        if not head or data.startswith(head, p):
            moves.extend(
                (q, text.owner(p, q, r))
                for q in range(p + 1, top + 1)
                if _lossy(data[p:q]) == token
            )
        return moves
    first = text.next_start[p]
    # completes the character begun in earlier tokens: written from that token on
    completes = p < first <= min(n, r + len(encoded))
    if completes and (not head or data.startswith(head, r)) and _lossy(data[r:first]) == token:
        moves.append((first, first))
    if not head or data.startswith(head, p):
        # holds a character's first byte, and ends where a character ends
        moves.extend(
            (q, q)
            for q in range(max(p, first) + 1, top + 1)
            if text.is_start[q] and _lossy(data[p:q]) == token
        )
    return moves


def _align(
    t: _Text, tokens: Sequence[str | None], rule: str, specials: bool = True
) -> list[set[Span]] | str:
    """Per token the spans it can have under ``rule``, or why no reading exists."""
    n_tok, n = len(tokens), len(t.data)
    edges: dict[_State, list[tuple[_State, Span]]] = {}
    frontier: list[_State] = [(0, 0, 0)]
    seen = {frontier[0]}
    while frontier:
        state = frontier.pop()
        if state[0] == n_tok:
            continue
        out = []
        for q, r in _moves(t, tokens[state[0]], state, rule, specials):
            nxt = (state[0] + 1, q, r)
            out.append((nxt, (state[1], q)))
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
        edges[state] = out
    live = _live(edges, seen, n_tok, n)
    if (0, 0, 0) not in live:
        return _why_not(t, tokens, seen)
    options: list[set[Span]] = [set() for _ in tokens]
    for state, out in edges.items():
        if state in live:
            for nxt, (p, q) in out:
                if nxt in live:
                    options[state[0]].add(t.span(p, q))
    return options


def align_partial_tokens(
    text: str, tokens: Sequence[str | None]
) -> tuple[tuple[tuple[Span, ...], ...], tuple[str, ...]]:
    """Every character span each of ``tokens`` can have, read under each server rule of this
    module that reproduces ``text`` (the union where both do), and the names of those rules;
    raises ``ValueError`` when neither does."""
    fast = _whole_texts(text, tokens)
    if fast is not None:
        return tuple(tuple(sorted(o)) for o in fast), (EMPTY_THEN_WHOLE,)
    t = _Text(text)
    found: dict[str, list[set[Span]]] = {}
    why = ""
    for rule in (EMPTY_THEN_WHOLE, ALONE):
        result = _align(t, tokens, rule)
        if isinstance(result, str):
            why = why or result
        else:
            found[rule] = result
    if not found:
        raise ValueError(why)
    merged = [set().union(*(o[k] for o in found.values())) for k in range(len(tokens))]
    return tuple(tuple(sorted(o)) for o in merged), tuple(found)


def _whole_texts(text: str, tokens: Sequence[str | None]) -> list[set[Span]] | None:
    """The common case in linear time: no ``U+FFFD`` and no unknown token, so the non-empty
    strings tile the text (current vLLM writes each completed character whole, with every byte
    since the last clean token). Each run of ``""`` tokens is then placed, with the token that
    completes it, inside that token's characters, by the reading above on those few bytes only.
    ``None`` where the strings do not tile the text that way (the full reading decides)."""
    if any(tok is None or REPLACEMENT in tok for tok in tokens):
        return None
    options: list[set[Span]] = [set() for _ in tokens]
    c, pending = 0, []
    for i, tok in enumerate(tokens):
        assert tok is not None
        if tok == "":
            pending.append(i)
            continue
        if not text.startswith(tok, c):
            if c == len(text) or (c == 0 and not pending):  # a special token at an end
                options[i].add((c, c))
                continue
            return None
        end = c + len(tok)
        if pending:
            local = _align(
                _Text(text[c:end]),
                [*(tokens[k] for k in pending), tok],
                EMPTY_THEN_WHOLE,
                specials=c == 0,
            )
            if isinstance(local, str):
                return None
            for k, spans in zip([*pending, i], local, strict=True):
                options[k] = {(s + c, e + c) for s, e in spans}
            pending = []
        else:
            options[i].add((c, end))
        c = end
    if c != len(text):
        return None
    for k in pending:  # after the text: special tokens
        options[k].add((c, c))
    return options


def _live(
    edges: dict[_State, list[tuple[_State, Span]]], seen: set[_State], n_tok: int, n: int
) -> set[_State]:
    """The states from which the last token can end at the last byte."""
    live = {s for s in seen if s[0] == n_tok and s[1] == n}
    by_token: dict[int, list[_State]] = {}
    for state in edges:
        by_token.setdefault(state[0], []).append(state)
    for i in range(n_tok - 1, -1, -1):
        live.update(s for s in by_token.get(i, ()) if any(nxt in live for nxt, _ in edges[s]))
    return live


def _why_not(t: _Text, tokens: Sequence[str | None], seen: set[_State]) -> str:
    """Where the furthest reading stopped, for the error."""
    i, p, _r = max(seen, key=lambda s: (s[0], s[1]))
    if i == len(tokens):
        return f"the tokens cover {t.char_of[p]} of the text's {len(t.text)} characters"
    at = t.char_of[p]
    return (
        f"token {i} ({tokens[i]!r}) does not match the text at character {at} "
        f"({t.text[at : at + 20]!r}), also reading '' and U+FFFD as parts of a character"
    )
