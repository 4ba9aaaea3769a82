"""The ``hf`` scorer on tiny local models: in-place tokenization (a token crossing the join),
the three rules, BOS/EOS handling, chat templates, and bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from choiceaudit.scorers import (  # noqa: E402
    HFScorer,
    ScorerError,
    load_scorer,
)
from choiceaudit.scorers._tokenize import encode_in_place  # noqa: E402
from choiceaudit.store import read_queries  # noqa: E402
from choiceaudit.types import Query  # noqa: E402

Naive = Callable[[Any, Any, int], np.ndarray]


def total_loglik(model: Any, ids: list[int]) -> float:
    """Σ_{j≥1} log P(ids[j] | ids[:j]) from one plain forward over the whole sequence."""
    if len(ids) < 2:
        return 0.0
    with torch.inference_mode():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), -1)
    return float(logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].sum())


def whole_string_reference(lm: Any, prompt: str, continuation: str) -> tuple[float, int]:
    """Brute force, independent of character offsets: tokenize the whole string, find the
    longest run of leading tokens whose surface strings spell a prefix of the prompt, and score
    the string minus that run: log P(full) − log P(run)."""
    tok = lm.tokenizer
    ids = tok(prompt + continuation, add_special_tokens=False)["input_ids"]
    pieces = tok.convert_ids_to_tokens(ids)
    spelled, k = "", 0
    for piece in pieces:
        if not prompt.startswith(spelled + piece):
            break
        spelled, k = spelled + piece, k + 1
    return total_loglik(lm.model, ids) - total_loglik(lm.model, ids[:k]), len(ids) - k


def test_a_token_crossing_the_join_is_scored_as_in_the_whole_string(
    tiny_lms: dict[str, Any],
) -> None:
    lm = tiny_lms["merge"]
    query = Query(state="Is the sky blue?", options=("yes", "no", "the sea"), instruction="Reply.")
    prompt = query.prompt()
    assert prompt.endswith("Answer:")
    # The tokenizer merges ":" with the option's first characters: ": yes" is one token.
    full = lm.tokenizer.convert_ids_to_tokens(lm.tokenizer(prompt + " yes")["input_ids"])
    assert full[-1] == ": yes"
    encs = encode_in_place(
        lm.tokenizer,
        [prompt] * 3,
        list(query.continuations()),
        add_special_tokens=True,
        labels=["a", "b", "c"],
    )
    assert [e.crosses_join for e in encs] == [True, True, True]
    # Cutting at len(tokenize(prompt)) would score no token at all for "yes".
    n_context = len(lm.tokenizer(prompt)["input_ids"])
    assert len(encs[0].ids) == n_context

    decision = HFScorer(lm).score([query])[0]
    for i, cont in enumerate(query.continuations()):
        ref, n_ref = whole_string_reference(lm, prompt, cont)
        assert decision.scores["sum"][i] == pytest.approx(ref, abs=1e-5)
        assert decision.n_tokens is not None and decision.n_tokens[i] == n_ref
    assert decision.n_tokens == (
        1,
        3,
        6,
    )  # ": yes" | ": ", "n", "o" | ": ", "the", " ", "s", "e", "a"
    assert decision.aux["crosses_join"] == [True, True, True]


def test_sum_mean_pmi_and_probs_follow_their_definitions(
    tiny_lms: dict[str, Any], naive_logprobs: Naive
) -> None:
    lm = tiny_lms["bos"]
    query = Query(
        state="The capital of France is?",
        options=("paris", "london berlin", "a b c d"),
        instruction="answer",
        neutral_state="The capital of ?",
    )
    decision = HFScorer(lm).score([query])[0]
    tok = lm.tokenizer
    sums: list[float] = []
    neutral_sums: list[float] = []
    counts: list[int] = []
    for cont in query.continuations():
        for prompt, out in ((query.prompt(), sums), (query.prompt(neutral=True), neutral_sums)):
            n_ctx = len(tok(prompt)["input_ids"]) - 1  # without the trailing </s>
            ids = tok(prompt + cont)["input_ids"][:-1]
            out.append(float(naive_logprobs(lm.model, ids, n_ctx).sum()))
            if out is sums:
                counts.append(len(ids) - n_ctx)
    sums_a = np.array(sums)
    np.testing.assert_allclose(decision.scores["sum"], sums_a, atol=1e-5)
    np.testing.assert_allclose(decision.scores["mean"], sums_a / np.array(counts), atol=1e-5)
    np.testing.assert_allclose(decision.scores["pmi"], sums_a - np.array(neutral_sums), atol=1e-5)
    expected = np.exp(sums_a - sums_a.max()) / np.exp(sums_a - sums_a.max()).sum()
    np.testing.assert_allclose(decision.probs, expected, atol=1e-6)
    assert decision.n_tokens == (1, 2, 4) == tuple(counts)
    assert decision.aux["n_tokens_neutral"] == [1, 2, 4]


def test_bos_is_context_and_an_appended_eos_is_not_scored(tiny_lms: dict[str, Any]) -> None:
    lm = tiny_lms["bos"]
    bos, eos = lm.tokenizer.bos_token_id, lm.tokenizer.eos_token_id
    raw = lm.tokenizer("answer: paris")["input_ids"]
    assert raw[0] == bos and raw[-1] == eos
    (enc,) = encode_in_place(
        lm.tokenizer, ["answer:"], [" paris"], add_special_tokens=True, labels=["x"]
    )
    assert enc.ids == tuple(raw[:-1]) and enc.ids[0] == bos
    assert enc.first_scored == 3 and enc.n_scored == 1 and not enc.crosses_join


def test_key_answer_format_scores_the_keys(tiny_lms: dict[str, Any], naive_logprobs: Naive) -> None:
    lm = tiny_lms["bos"]
    query = Query(state="paris?", options=("yes", "no"), keys=("a", "b"), answer_format="key")
    decision = HFScorer(lm).score([query])[0]
    n_ctx = len(lm.tokenizer(query.prompt())["input_ids"]) - 1
    for i, key in enumerate(("a", "b")):
        ids = lm.tokenizer(query.prompt() + " " + key)["input_ids"][:-1]
        assert decision.scores["sum"][i] == pytest.approx(
            naive_logprobs(lm.model, ids, n_ctx).sum(), abs=1e-5
        )


def test_option_that_tokenizes_to_nothing_is_a_clear_error(tiny_lms: dict[str, Any]) -> None:
    query = Query(state="paris?", options=("yes", "~~"))
    with pytest.raises(
        ScorerError, match=rf"query {query.id} option 1 \('~~'\).*tokenizes to nothing"
    ):
        HFScorer(tiny_lms["bos"]).score([query])


def test_prompt_longer_than_the_context_window_is_a_clear_error(tiny_lms: dict[str, Any]) -> None:
    query = Query(state=" ".join(["paris"] * 80), options=("yes", "no"))
    with pytest.raises(ScorerError, match=rf"query {query.id}: the prompt .* context window of 64"):
        HFScorer(tiny_lms["bos"]).score([query])
    neutral = Query(state="paris", options=("yes", "no"), neutral_state=" ".join(["a"] * 80))
    with pytest.raises(ScorerError, match="the neutral prompt plus option 0 is"):
        HFScorer(tiny_lms["bos"]).score([neutral])


def test_the_context_window_boundary_is_exact(tiny_lms: dict[str, Any]) -> None:
    scorer = HFScorer(tiny_lms["bos"])
    fits = Query(state=" ".join(["paris"] * 60), options=("yes", "no"))
    assert [len(e.ids) for e in scorer._encode(fits)[0]] == [64, 64]  # prompt plus option
    (decision,) = scorer.score([fits])
    assert np.all(np.isfinite(decision.scores["sum"]))
    over = Query(state=" ".join(["paris"] * 61), options=("yes", "no"))
    with pytest.raises(ScorerError, match="plus option 0 is 65 tokens") as info:
        scorer.score([fits, over])
    assert info.value.query_id == over.id


def test_a_refusal_names_the_input_line_of_a_query_file(
    tiny_lms: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "queries.jsonl"
    lines = [
        {"state": "paris", "options": ["yes", "no"]},
        {},  # a blank line is skipped but still counted
        {"state": " ".join(["paris"] * 80), "options": ["yes", "no"]},
    ]
    path.write_text("\n".join(json.dumps(x) if x else "" for x in lines) + "\n", "utf-8")
    result = read_queries(path)
    assert [result.line_of(q.id) for q in result.queries] == [1, 3]
    with pytest.raises(ScorerError) as info:
        try:
            HFScorer(tiny_lms["bos"]).score(result.queries)
        except ScorerError as exc:
            result.locate(exc)
            raise
    long_id = result.queries[1].id
    assert str(info.value).startswith(f"{path}:3: query {long_id}: the prompt plus option 0 is")


def test_empty_menu_is_refused_and_no_queries_score_nothing(tiny_lms: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="options is empty"):
        Query(state="paris?", options=())
    assert HFScorer(tiny_lms["bos"]).score([]) == []


def test_chat_template_is_applied_verbatim(
    tiny_lms: dict[str, Any], tiny_dirs: dict[str, Path], chat_template_text: str
) -> None:
    CHAT_TEMPLATE = chat_template_text
    lm = tiny_lms["merge"]
    query = Query(state="Is the sky blue?", options=("yes", "no"), instruction="Reply.")
    scorer = HFScorer(lm, chat_template=CHAT_TEMPLATE)
    context = scorer.renderer.context(query.prompt())
    assert context == f"<|user|>{query.prompt()}\n<|assistant|>"
    decision = scorer.score([query])[0]
    for i, option in enumerate(query.options):
        ref, n_ref = whole_string_reference(lm, context, option)  # no leading space in a reply
        assert decision.scores["sum"][i] == pytest.approx(ref, abs=1e-5)
        assert decision.n_tokens is not None and decision.n_tokens[i] == n_ref
    # A base model scored under its instruct sibling's template, named by model.
    sibling = HFScorer(lm, chat_template=f"hf:{tiny_dirs['chat']}")
    assert sibling.chat is not None and sibling.chat.template == CHAT_TEMPLATE
    np.testing.assert_array_equal(sibling.score([query])[0].scores["sum"], decision.scores["sum"])
    system = HFScorer(tiny_lms["chat"], chat_template="own", system_prompt="Be brief.")
    assert system.renderer.context("x") == "<|system|>Be brief.\n<|user|>x\n<|assistant|>"


def test_missing_chat_template_is_a_clear_error(tiny_lms: dict[str, Any]) -> None:
    with pytest.raises(ScorerError, match="has no chat template"):
        HFScorer(tiny_lms["merge"], chat_template="own")
    with pytest.raises(ScorerError, match="system_prompt needs a chat_template"):
        HFScorer(tiny_lms["merge"], system_prompt="Be brief.")


def test_registry_loads_a_local_directory_and_describes_it(tiny_dirs: dict[str, Path]) -> None:
    scorer = load_scorer(f"hf:{tiny_dirs['bos']}", max_batch_rows=2)
    assert isinstance(scorer, HFScorer)
    info = scorer.describe()
    assert info["backend"] == "hf" and info["rules"] == ["sum", "mean", "pmi"]
    assert info["dtype"] == "float32" and info["context_window"] == 64
    assert info["weights_sha256"] and len(info["weights_sha256"]) == 64
    assert info["engine"]["max_batch_rows"] == 2 and info["chat_template"] is None
    assert json.loads(json.dumps(info)) == info  # the manifest stores it as JSON


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    state=st.text(alphabet="abehsty: \n", min_size=1, max_size=20),
    options=st.lists(
        st.text(alphabet="abehsty: ", min_size=1, max_size=8).filter(lambda s: s.strip()),
        min_size=1,
        max_size=4,
        unique=True,
    ),
)
def test_in_place_scores_equal_the_whole_string_reference_for_any_join(
    tiny_lms: dict[str, Any], state: str, options: list[str]
) -> None:
    """Random prompt ends and option starts, so merges land on every side of the join. When the
    first token already reaches into the option there is nothing to condition on (this
    tokenizer adds no BOS), and that must be an error, not a silently shortened option."""
    lm = tiny_lms["merge"]
    query = Query(state=state, options=tuple(options), template="{state}")
    refs = [whole_string_reference(lm, query.prompt(), c) for c in query.continuations()]
    n_total = [len(lm.tokenizer(query.prompt() + c)["input_ids"]) for c in query.continuations()]
    if any(n_ref == n for (_, n_ref), n in zip(refs, n_total, strict=True)):
        with pytest.raises(ScorerError, match="no context to condition"):
            HFScorer(lm).score([query])
        return
    decision = HFScorer(lm).score([query])[0]
    for i, (ref, n_ref) in enumerate(refs):
        # fp32 rounding of the reused prefix differs per token, so a sum's bound grows with its
        # length: 1e-5 per scored token, the engine's stated agreement
        assert decision.scores["sum"][i] == pytest.approx(ref, abs=1e-5 * n_ref)
        assert decision.n_tokens is not None and decision.n_tokens[i] == n_ref
