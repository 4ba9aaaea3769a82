"""The ``openai`` scorer's conformance probe against a toy server with each fault
llama-cpp-python's server was seen to have: a shifted echo, generation after ``max_tokens: 0``,
one prompt per request, byte tokens decoded as ``""``; with the faults a proxy can add (every
position but the last shifted, two tokens merged, one repeated, NaN or positive values, another
model's name); and a run refused before any row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from choiceaudit.audit import run_scoring
from choiceaudit.scorers import OpenAIScorer, ProbeFailed, ScorerError
from choiceaudit.scorers._probe import CONDITIONAL_STEPS
from choiceaudit.store import RunStore
from choiceaudit.types import Query
from scorers.openai_fake_server import VOCAB, FakeServer, logprobs_after, tokenize

CONDITIONAL = "echo log-probabilities are conditional"


def scorer_for(server: FakeServer, **kwargs: Any) -> tuple[OpenAIScorer, list[float]]:
    sleeps: list[float] = []
    kwargs.setdefault("reorder_check", 0)
    scorer = OpenAIScorer(
        "http://llama.test",
        "toy",
        transport=httpx.MockTransport(server),
        sleep=sleeps.append,
        **kwargs,
    )
    return scorer, sleeps


def queries(n: int) -> list[Query]:
    return [
        Query(
            state=f"The cat {i}", options=("yes", "no"), instruction="", template="{state}\nAnswer:"
        )
        for i in range(n)
    ]


def test_a_conformant_server_passes_and_the_result_is_in_the_manifest() -> None:
    server = FakeServer()
    scorer, _ = scorer_for(server)
    result = scorer.prepare()
    assert result.status == "passed" and result.prompts_per_request == "several"
    # every continued position of every prefix is compared, the first included
    assert result.compared == 3 * CONDITIONAL_STEPS and result.max_abs_diff == 0.0
    assert {c["step"] for c in result.comparisons} == set(range(CONDITIONAL_STEPS))
    assert min(c["position"] for c in result.comparisons) == 1
    # each comparison is the toy model's own log P(greedy token | prefix)
    first = result.comparisons[0]
    greedy = max(
        lp
        for lp, v in zip(logprobs_after(first["prefix"]), VOCAB, strict=True)
        if isinstance(v, str)
    )
    assert first["echoed"] == first["generated"] == greedy
    probe = scorer.describe()["probe"]
    assert probe["status"] == "passed" and CONDITIONAL in probe["checks_passed"]
    assert scorer.prepare() is result  # once per scorer


def test_a_shifted_echo_is_refused_naming_the_check_and_the_numbers() -> None:
    scorer, _ = scorer_for(FakeServer(faults=frozenset({"shifted"})))
    with pytest.raises(ProbeFailed) as info:
        scorer.prepare()
    assert info.value.check == CONDITIONAL
    message = str(info.value)
    assert "after 'The' the server generates" in message
    assert "shifts them by one position" in message and "probe=false" in message


@pytest.mark.parametrize(
    ("fault", "check", "says"),
    [
        ("shift_but_last", CONDITIONAL, "not log P(token | the tokens before it)"),
        ("merge", "one log-probability per prompt token", "merged, dropped or repeated"),
        ("duplicate", "tokens tile the text", "counted twice"),
        ("nan", "log-probabilities are possible", "nan"),
        ("positive", "log-probabilities are possible", "0.5"),
    ],
)
def test_each_echo_fault_is_refused_naming_its_check(fault: str, check: str, says: str) -> None:
    scorer, _ = scorer_for(FakeServer(faults=frozenset({fault})), max_retries=0)
    with pytest.raises(ProbeFailed) as info:
        scorer.prepare()
    assert info.value.check == check and says in str(info.value)


def test_a_server_answering_as_another_model_is_refused_by_the_probe() -> None:
    scorer, _ = scorer_for(FakeServer(faults=frozenset({"swapped_model"})), max_retries=0)
    with pytest.raises(ScorerError, match="asked for model 'toy', the server answered as 'other'"):
        scorer.prepare()


def test_generation_after_the_echo_is_refused_without_retries() -> None:
    server = FakeServer(faults=frozenset({"generates"}))
    scorer, sleeps = scorer_for(server)
    with pytest.raises(ProbeFailed, match="nothing generated after the echo") as info:
        scorer.prepare()
    assert "reads max_tokens 0 as 'no limit'" in str(info.value)
    assert len(server.requests) == 1 and sleeps == []


def test_an_echo_that_never_ends_is_refused_as_generation_not_as_a_timeout() -> None:
    server = FakeServer(faults=frozenset({"unlimited"}))
    scorer, _ = scorer_for(server)
    with pytest.raises(ProbeFailed, match="nothing generated after the echo") as info:
        scorer.prepare()
    assert "reads max_tokens 0 as 'no limit'" in str(info.value)
    # two timed-out echoes (one retry), then the echo with max_tokens 1 that answered
    assert [b["max_tokens"] for b in server.requests] == [0, 0, 1]


def test_an_unlimited_one_prompt_server_is_refused_as_generation_too() -> None:
    server = FakeServer(faults=frozenset({"unlimited", "one_prompt"}))
    scorer, _ = scorer_for(server)
    with pytest.raises(ProbeFailed, match="nothing generated after the echo"):
        scorer.prepare()
    # the list is refused (500, one retry), the single prompt times out twice, then max_tokens 1
    assert [isinstance(b["prompt"], list) for b in server.requests] == [
        True,
        True,
        False,
        False,
        False,
    ]
    assert server.requests[-1]["max_tokens"] == 1


def test_a_one_prompt_server_is_adapted_to_after_one_retry() -> None:
    server = FakeServer(faults=frozenset({"one_prompt"}))
    scorer, _ = scorer_for(server)
    result = scorer.prepare()
    assert result.prompts_per_request == "one"
    assert result.several_prompts_answer is not None
    assert "AssertionError" in result.several_prompts_answer
    listed = [r for r in server.requests if isinstance(r["prompt"], list)]
    assert len(listed) == 2  # the recurring 500 was retried once, not six times
    before = len(server.requests)
    qs = queries(2)
    decisions = scorer.score(qs)
    sent = server.requests[before:]
    assert len(sent) == 4 and all(isinstance(r["prompt"], str) for r in sent)
    # the scores are the toy model's: option "yes" after "Answer:" is the one token " yes"
    text = qs[0].prompt() + " yes"
    start = tokenize(text)[-1][1]
    expected = logprobs_after(text[:start])[VOCAB.index(" yes")]
    assert decisions[0].n_tokens == (1, 1)
    assert decisions[0].scores["sum"][0] == pytest.approx(expected, abs=1e-12)
    assert scorer.describe()["prompts_per_request"] == "one"


def test_partial_utf8_tokens_are_refused_as_such() -> None:
    scorer, _ = scorer_for(FakeServer(faults=frozenset({"partial_utf8"})))
    with pytest.raises(ProbeFailed, match="tokens tile the text") as info:
        scorer.prepare()
    assert "byte token of a multi-byte character as an empty string" in str(info.value)
    assert "vLLM" not in str(info.value)  # vLLM does not write whole characters on every token
    assert "truncated" not in str(info.value)


def test_a_server_without_echo_is_refused_at_once_naming_it() -> None:
    # llama.cpp's llama-server answers every echo: true with HTTP 500 "Only no echo is supported"
    server = FakeServer(faults=frozenset({"no_echo"}))
    scorer, sleeps = scorer_for(server)
    with pytest.raises(ProbeFailed) as info:
        scorer.prepare()
    assert info.value.check == "echo with log-probabilities"
    message = str(info.value)
    assert "Only no echo is supported" in message and "does not implement echo" in message
    assert "llama-cpp:<file.gguf>" in message and "probe=false cannot help" in message
    # the recurring 500 is asked twice (one retry), not once per prompt or seven times
    assert len(server.requests) == 2 and len(sleeps) == 1


def test_a_server_that_ignores_echo_is_refused_naming_it() -> None:
    # llama.cpp's llama-server: one generated token, chat-format log-probabilities, no prompt
    server = FakeServer(faults=frozenset({"ignores_echo"}))
    scorer, _ = scorer_for(server)
    with pytest.raises(ProbeFailed) as info:
        scorer.prepare()
    assert info.value.check == "echo with log-probabilities"
    message = str(info.value)
    assert "it ignores 'echo'" in message and "llama-cpp:<file.gguf>" in message
    assert "probe=false cannot help" in message and "truncated" not in message


def test_without_the_probe_a_server_without_echo_fails_after_one_retry() -> None:
    # "Only no echo is supported" says it will recur: asked twice, not seven times
    server = FakeServer(faults=frozenset({"no_echo"}))
    scorer, sleeps = scorer_for(server, probe=False)
    with pytest.raises(ScorerError, match="Only no echo is supported"):
        scorer.score(queries(1))
    assert len(server.requests) == 2 and len(sleeps) == 1


def test_probe_false_skips_and_says_so() -> None:
    server = FakeServer(faults=frozenset({"shifted"}))
    scorer, _ = scorer_for(server, probe=False)
    assert scorer.prepare().status == "skipped (probe=false)"
    assert server.requests == []
    assert scorer.describe()["probe"]["status"] == "skipped (probe=false)"


def test_a_run_over_a_failing_server_writes_no_row(tmp_path: Path) -> None:
    scorer, _ = scorer_for(FakeServer(faults=frozenset({"shifted"})))
    with pytest.raises(ProbeFailed):
        run_scoring(scorer, queries(3), tmp_path / "run")
    assert RunStore(tmp_path / "run").done_ids() == set()
    assert not (tmp_path / "run" / "manifest.json").exists()


def test_a_passing_probe_is_recorded_in_the_run_manifest(tmp_path: Path) -> None:
    scorer, _ = scorer_for(FakeServer())
    summary = run_scoring(scorer, queries(3), tmp_path / "run")
    assert summary.scored == 3
    manifest = RunStore(tmp_path / "run").read_manifest()
    assert manifest["scorer"]["probe"]["status"] == "passed"
    assert manifest["scorer"]["probe"]["conditional"]["compared"] == 3 * CONDITIONAL_STEPS


class FlakyProxy:
    """A proxy in front of the toy server that fails a fixed share of calls, in a fixed
    pattern: a 502 or 503 from the proxy, or a connection reset (``pattern`` holds the failing
    call numbers modulo its ``period``)."""

    def __init__(self, server: FakeServer, failing: set[int], period: int) -> None:
        self.server, self.failing, self.period = server, failing, period
        self.calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        n = self.calls
        self.calls += 1
        if n % self.period in self.failing:
            kind = n % 3
            if kind == 0:
                raise httpx.ReadError("connection reset by peer", request=request)
            return httpx.Response(502 if kind == 1 else 503, text="upstream unavailable")
        return self.server(request)


# failures in runs of 3 and 5 calls: more than one retry is needed, fewer than the backoff's 6
@pytest.mark.parametrize(
    ("failing", "period"), [({0, 1, 2}, 10), ({0, 1, 2, 3, 4}, 10)], ids=["30%", "50%"]
)
def test_the_probe_and_the_run_get_through_a_flaky_proxy(
    tmp_path: Path, failing: set[int], period: int
) -> None:
    proxy = FlakyProxy(FakeServer(), failing, period)
    flaky = OpenAIScorer(
        "http://llama.test",
        "toy",
        transport=httpx.MockTransport(proxy),
        sleep=lambda s: None,
        reorder_check=0,
    )
    direct, _ = scorer_for(FakeServer())
    qs = queries(6)
    run_scoring(flaky, qs, tmp_path / "flaky", chunk_size=3)
    run_scoring(direct, qs, tmp_path / "direct", chunk_size=3)
    assert flaky.describe()["probe"]["status"] == "passed"
    assert flaky.describe()["counts"]["retries"] > 0  # it was flaky, and retried
    a = RunStore(tmp_path / "flaky").read_table().to_pylist()
    b = RunStore(tmp_path / "direct").read_table().to_pylist()
    assert [r["query_id"] for r in a] == [r["query_id"] for r in b]
    for column in ("probs", "score_sum", "score_mean", "n_tokens"):  # bit for bit
        assert [r[column] for r in a] == [r[column] for r in b], column
