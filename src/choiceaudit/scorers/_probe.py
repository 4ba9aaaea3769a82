"""The conformance probe of the ``openai`` scorer: is this server's prompt scoring what the
scorer assumes, checked on a few built-in strings before the first row.

An inference server that answers in the right format can still answer wrongly, and then every
score is wrong without any error (llama-cpp-python's server did: its echoed log-probabilities
were shifted by one position, it generated after ``max_tokens: 0``, it took one prompt per
request and decoded partial UTF-8 tokens as ``""``). The probe checks, in this order:

1. **several prompts per request** — two strings in one request. A server that refuses the
   list (or answers only one of them) is asked again with one prompt as a plain string; if
   that works, the scorer sends one prompt per request from then on and the manifest says so.
2. **nothing generated after the echo** and **the tokens tile the text** (each character in
   exactly one token; the strings hold accented letters, CJK characters and an emoji, whose
   byte-level tokens a server may decode as ``""``), **one log-probability per prompt
   token** (where the server reports its count) and **log-probabilities are possible** —
   the same checks as every scored answer (:mod:`._openai_wire`). A server that answers an
   echo with an error saying echo is not supported (llama.cpp's own ``llama-server`` answers
   every ``echo: true`` with "Only no echo is supported") is refused at once with that cause:
   without the prompt's own log-probabilities nothing can be scored through it, so
   ``probe=false`` cannot help either. So is a server whose answer to an echo does not start
   with the prompt: it ignored ``echo`` (llama.cpp's ``llama-server`` here answered with one
   generated token and nothing of the prompt).
3. **echo log-probabilities are conditional** — each prefix ``P`` of
   :data:`CONDITIONAL_PREFIXES` is continued greedily one token per request
   (:data:`CONDITIONAL_STEPS` times, each token appended before the next request), giving
   tokens ``g1 … gk`` with ``log P(gi | P g1 … gi-1)``; the echo of ``P g1 … gk`` must give
   every ``gi`` the same log-probability within ``probe_tolerance`` — the first continued
   position, the middle ones and the last, so a server that shifts, drops or mixes any of them
   is caught, not only one that gets the last token wrong. A position is compared where the
   echo has ``gi`` as one token at its place (an echo may merge two continuations into one
   token); at least one comparison must be possible.

A server that fails is refused with :class:`ProbeFailed`: the check, the server's answer and
what to do. ``probe=False`` skips the probe, and the manifest records that it was skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from choiceaudit.scorers._client_prompt import ClientPrompt
from choiceaudit.scorers._openai_wire import (
    COUNTED,
    NO_GENERATION,
    POSSIBLE,
    TILING,
    ConformanceError,
    Parsed,
)
from choiceaudit.scorers._protocol import ScorerError

_T = TypeVar("_T")


class ProbeTarget(Protocol):
    """What the probe reads and calls of the scorer it checks (the ``openai`` scorer): its
    server, model and prompt, its request and retry path, and where it records whether the
    server takes several prompts per request."""

    model: str
    endpoint: str
    prompt: ClientPrompt
    probe: bool
    probe_tolerance: float
    several_prompts: bool

    @property
    def api(self) -> str: ...

    def scored(self, texts: list[str], *, as_list: bool, **retries: int | None) -> Parsed: ...

    def exchange(
        self,
        method: str,
        url: str,
        body: Mapping[str, object] | None,
        *,
        where: str,
        parse: Callable[[Any], Any] = ...,
        **retries: int | None,
    ) -> Any: ...

    def redact(self, value: _T) -> _T: ...


__all__ = [
    "CONDITIONAL",
    "CONDITIONAL_PREFIXES",
    "CONDITIONAL_STEPS",
    "ECHO",
    "SEVERAL_PROMPTS",
    "TILE_TEXTS",
    "ProbeFailed",
    "ProbeResult",
    "ProbeTarget",
    "run_probe",
    "skipped_probe",
]

SEVERAL_PROMPTS = "several prompts per request"
CONDITIONAL = "echo log-probabilities are conditional"
ECHO = "echo with log-probabilities"

#: Strings whose echo must tile: plain words, the prompt/answer join, non-ASCII, an emoji.
TILE_TEXTS = ("The capital of France is Paris.", "Answer: yes, naïve café 日本語 🙂 ok")
#: Prefixes continued greedily, one token per request, whose echo is then compared at every
#: continued position: a one-token prefix reaches the string's first scored position, the
#: others its middle, and the last step its end.
CONDITIONAL_PREFIXES = ("The", "The capital of France is", "One, two, three, four,")
#: One-token continuations asked per prefix.
CONDITIONAL_STEPS = 5

_SKIP_HINT = "-o probe=false skips the probe, at the risk of wrong scores"

#: The probe's requests are retried as the scoring loop's are (a 429, 502, 503 or 504, a reset
#: connection, under the backoff: a flaky proxy does not refuse a correct server), except that a
#: timeout is retried once: the probe then asks why (a server generating without limit after
#: the echo answers an echo with max_tokens 1 at once) instead of waiting through every retry.
_RETRIES: dict[str, Any] = {"max_retries": None, "timeout_retries": 1}
#: An error answer saying the server has no echo at all (llama-server: "Only no echo is supported")
_NO_ECHO = re.compile(
    r"only no echo|echo (?:is )?not (?:yet )?(?:supported|implemented)|unsupported[^.]{0,40}echo",
    re.IGNORECASE,
)
_FIX_HINT = (
    "use a server whose prompt scoring is exact (vLLM, SGLang, choiceaudit serve-model) or "
    "score the model in process"
)


class ProbeFailed(ScorerError):
    """The server failed the conformance probe; ``check`` names the check."""

    def __init__(self, check: str, message: str) -> None:
        super().__init__(f"openai server failed the probe check {check!r}: {message}")
        self.check = check


@dataclass(frozen=True)
class ProbeResult:
    """What the probe found (the manifest's ``scorer.probe``)."""

    status: str  # "passed" or "skipped"
    passed: tuple[str, ...] = ()
    prompts_per_request: str | None = None
    several_prompts_answer: str | None = None
    compared: int = 0
    inconclusive: int = 0
    max_abs_diff: float | None = None
    tolerance: float | None = None
    comparisons: tuple[dict[str, Any], ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "checks_passed": list(self.passed),
            "prompts_per_request": self.prompts_per_request,
            "several_prompts_answer": self.several_prompts_answer,
            "conditional": {
                "compared": self.compared,
                "inconclusive": self.inconclusive,
                "max_abs_diff": self.max_abs_diff,
                "tolerance": self.tolerance,
                "comparisons": list(self.comparisons),
            },
        }


def skipped_probe() -> ProbeResult:
    return ProbeResult(status="skipped (probe=false)")


def run_probe(scorer: ProbeTarget) -> ProbeResult:
    """Check ``scorer``'s server (see the module docstring); adapts ``scorer.several_prompts``."""
    answer = _echo_checks(scorer)
    comparisons, inconclusive = _conditional(scorer)
    diffs = [c["abs_diff"] for c in comparisons]
    return ProbeResult(
        status="passed",
        passed=(
            SEVERAL_PROMPTS if answer is None else "one prompt per request",
            NO_GENERATION,
            TILING,
            COUNTED,
            POSSIBLE,
            CONDITIONAL,
        ),
        prompts_per_request="several" if scorer.several_prompts else "one",
        several_prompts_answer=answer,
        compared=len(comparisons),
        inconclusive=inconclusive,
        max_abs_diff=max(diffs),
        tolerance=scorer.probe_tolerance,
        comparisons=tuple(comparisons),
    )


def _conformance(exc: ConformanceError) -> ProbeFailed:
    return ProbeFailed(exc.check, f"{exc} ({_SKIP_HINT})")


def _echo_checks(scorer: ProbeTarget) -> str | None:
    """Echo the tiling strings, several per request if the server takes them (else one, and
    the scorer adapts); ``None``, or the server's answer to several prompts."""
    texts = list(TILE_TEXTS)
    try:
        scorer.scored(texts, as_list=True, **_RETRIES)
        return None
    except ConformanceError as exc:
        raise _conformance(exc) from None
    except ScorerError as exc:
        answer = str(exc)
        _refuse_without_echo(texts[0], answer)
        if "timeout" in answer:
            _unlimited_generation(scorer, texts[0], answer)
        elif "invalid response" in answer:
            _ignored_echo(scorer, texts[0], answer)
    try:
        for text in texts:
            scorer.scored([text], as_list=False, **_RETRIES)
    except ConformanceError as exc:
        raise _conformance(exc) from None
    except ScorerError as exc:
        cause = ""
        if "timeout" in str(exc):
            _unlimited_generation(scorer, texts[0], str(exc))
            cause = (
                " (the echo with max_tokens 1 asked next did not answer either; a server that "
                "reads max_tokens 0 as 'no limit', as llama-cpp-python's does, is still busy "
                "generating for the timed-out requests and fails this way)"
            )
        _refuse_without_echo(texts[0], str(exc))
        if "invalid response" in str(exc):
            _ignored_echo(scorer, texts[0], str(exc))
        raise ProbeFailed(
            ECHO,
            f"asked to echo {texts[0]!r} with log-probabilities and max_tokens 0, the server "
            f"answered: {exc}{cause}; {_FIX_HINT} ({_SKIP_HINT})",
        ) from None
    scorer.several_prompts = False
    return answer


def _refuse_without_echo(text: str, answer: str) -> None:
    """Refuse a server whose error answer says it has no echo: every scored request needs the
    echoed prompt's log-probabilities, so neither retrying nor skipping the probe helps."""
    if not _NO_ECHO.search(answer):
        return
    raise ProbeFailed(
        ECHO,
        f"asked to echo {text!r} with log-probabilities and max_tokens 0, the server answered: "
        f"{answer}; it does not implement echo (llama.cpp's llama-server refuses every "
        "'echo: true' this way), so it cannot give a prompt's own log-probabilities and no "
        "option can be scored through it; score the same GGUF file in process with "
        "llama-cpp:<file.gguf>, or use a server whose prompt scoring is exact (vLLM, SGLang, "
        "choiceaudit serve-model); -o probe=false cannot help, every scored request needs the echo",
    )


def _ignored_echo(scorer: ProbeTarget, text: str, answer: str) -> None:
    """After an echo answer that could not be read as one: if the server's answer to one echo does not
    start with the prompt, it ignored ``echo`` (llama.cpp's llama-server answers with the
    generated token only, in the chat format's ``content`` log-probabilities), which is the
    failure to name rather than the unreadable answer."""
    body = {
        "model": scorer.model,
        "prompt": text,
        "max_tokens": 0,
        "temperature": 0.0,
        "logprobs": 1,
        "echo": True,
        **scorer.prompt.body_fields(),
    }
    try:
        data = scorer.exchange("POST", scorer.endpoint, body, where="an echo", max_retries=0)
        got = data["choices"][0]["text"]
    except (ScorerError, KeyError, IndexError, TypeError):
        return  # nothing readable: the first answer stands as the failure
    if not isinstance(got, str) or got.startswith(text):
        return
    raise ProbeFailed(
        ECHO,
        f"asked to echo {text!r} with log-probabilities and max_tokens 0, the server answered "
        f"with the text {scorer.redact(got)[:80]!r} only ({answer}): it ignores 'echo', so it "
        "gives no log-probability for the prompt's own tokens and no option can be scored "
        "through it (llama.cpp's llama-server does this, and generates a token after "
        "max_tokens 0 as well); score the same GGUF file in process with llama-cpp:<file.gguf>, "
        "or use a server whose prompt scoring is exact (vLLM, SGLang, choiceaudit serve-model); "
        "-o probe=false cannot help, every scored request needs the echo",
    )


def _unlimited_generation(scorer: ProbeTarget, text: str, answer: str) -> None:
    """After an echo with ``max_tokens: 0`` timed out: if the same echo with ``max_tokens: 1``
    answers, the server is generating without limit after the echo (llama-cpp-python's server
    reads 0 as "no limit" and generates until its context is full), which is the failure to
    name rather than the timeout."""
    body = {
        "model": scorer.model,
        "prompt": text,
        "max_tokens": 1,
        "temperature": 0.0,
        "logprobs": 1,
        "echo": True,
        **scorer.prompt.body_fields(),
    }
    try:
        scorer.exchange(
            "POST", scorer.endpoint, body, where="an echo with max_tokens 1", max_retries=0
        )
    except ScorerError:
        return  # the server does not answer at all: the timeout stands as the failure
    raise ProbeFailed(
        NO_GENERATION,
        f"an echo of {text!r} with max_tokens 0 did not finish ({answer}), but the same echo "
        "with max_tokens 1 answered at once: the server reads max_tokens 0 as 'no limit' and "
        "generates after the echo until its context is full (llama-cpp-python's server does); "
        f"{_FIX_HINT} ({_SKIP_HINT})",
    )


def _one_token_body(scorer: ProbeTarget, prefix: str) -> dict[str, Any]:
    if scorer.api == "sglang":
        return {
            "text": prefix,
            "sampling_params": {"max_new_tokens": 1, "temperature": 0.0},
            "return_logprob": True,
            "return_text_in_logprobs": True,
        }
    return {
        "model": scorer.model,
        "prompt": prefix,
        "max_tokens": 1,
        "temperature": 0.0,
        "logprobs": 1,
        "echo": False,
        **scorer.prompt.body_fields(),  # the echo it is compared with carries them too
    }


def _generated(scorer: ProbeTarget, data: Any) -> tuple[str, float]:
    """The generated token's text and log-probability in a one-token completion."""
    if scorer.api == "sglang":
        item = data[0] if isinstance(data, list) else data
        lp, _, text = item["meta_info"]["output_token_logprobs"][0]
        return str(text), float(lp)
    lp_block = data["choices"][0]["logprobs"]
    return str(lp_block["tokens"][0]), float(lp_block["token_logprobs"][0])


def _continue(scorer: ProbeTarget, prefix: str) -> list[tuple[int, str, float]]:
    """Greedy one-token continuations of ``prefix``, each appended to the text before the
    next (:data:`CONDITIONAL_STEPS` at most): ``(start, token, log-probability)`` each. Stops
    at a token that is not whole text (an empty or partial character cannot be appended)."""
    steps: list[tuple[int, str, float]] = []
    text = prefix
    for _ in range(CONDITIONAL_STEPS):
        try:
            data = scorer.exchange(
                "POST",
                scorer.endpoint,
                _one_token_body(scorer, text),
                where="a one-token completion",
                **_RETRIES,
            )
            token, generated_lp = _generated(scorer, data)
        except (ScorerError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise ProbeFailed(
                CONDITIONAL,
                f"asked for a one-token completion of {text!r} with log-probabilities (to "
                f"compare with its echo), the server answered: {scorer.redact(str(exc))}; "
                f"{_FIX_HINT} ({_SKIP_HINT})",
            ) from None
        if not token or "\ufffd" in token:
            break
        steps.append((len(text), token, generated_lp))
        text += token
    return steps


def _conditional(scorer: ProbeTarget) -> tuple[list[dict[str, Any]], int]:
    """Compare every continued position's echoed log-probability with the continuation's."""
    comparisons: list[dict[str, Any]] = []
    inconclusive = 0
    for prefix in CONDITIONAL_PREFIXES:
        steps = _continue(scorer, prefix)
        if not steps:
            inconclusive += 1
            continue
        text = prefix + "".join(token for _, token, _ in steps)
        try:
            (tokens,) = scorer.scored([text], as_list=scorer.several_prompts, **_RETRIES).tokens
        except ConformanceError as exc:
            raise _conformance(exc) from None
        at = {span: j for j, span in enumerate(tokens.spans) if span[1] > span[0]}
        for k, (start, token, generated_lp) in enumerate(steps):
            j = at.get((start, start + len(token)))
            # a continuation the echo tokenizes otherwise (merged with its neighbour) cannot be
            # compared; nor can a token whose span the server's strings leave open
            if (
                j is None
                or tokens.logprobs[j] is None
                or (tokens.options is not None and len(tokens.options[j]) > 1)
            ):
                inconclusive += 1
                continue
            echoed = tokens.logprobs[j]
            assert echoed is not None
            diff = abs(echoed - generated_lp)
            comparisons.append(
                {
                    "prefix": text[:start],
                    "position": j,
                    "step": k,
                    "token": token,
                    "echoed": echoed,
                    "generated": generated_lp,
                    "abs_diff": diff,
                }
            )
            if diff > scorer.probe_tolerance:
                raise ProbeFailed(
                    CONDITIONAL,
                    f"after {text[:start]!r} the server generates {token!r} with "
                    f"log-probability {generated_lp:.6g}, but echoes {echoed:.6g} for the same "
                    f"token (position {j}) in {text!r} ({diff:.3g} apart, tolerance "
                    f"{scorer.probe_tolerance}): its echoed log-probabilities are not "
                    "log P(token | the tokens before it) (llama-cpp-python's server shifts "
                    f"them by one position), so every score would be wrong; {_FIX_HINT} "
                    f"({_SKIP_HINT})",
                )
    if not comparisons:
        raise ProbeFailed(
            CONDITIONAL,
            f"none of the continuations of the {len(CONDITIONAL_PREFIXES)} prefixes could be "
            "compared with an echo (each generated token was empty, a partial character, or "
            f"merged with its neighbour when echoed); {_SKIP_HINT}",
        )
    return comparisons, inconclusive
