"""A reduced precision's products run at one fixed shape, so a row's bits are its own.

Bfloat16 GEMMs on the CPU pick their reduction blocking by the number of rows (measured on an
Intel Xeon with AMX: a row of a 512 → 1024 product rounds differently in products of 64 and
1,100 rows), so the engine runs every product of a reduced-precision model in tiles of one shape.
These tests hold the property itself — a row's result is the same whatever rows it is computed
with — so they pass on hardware whose kernels never had the dependence and catch a regression on
hardware whose kernels have it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch import nn  # noqa: E402

from choiceaudit.scorers import (  # noqa: E402
    EngineOptions,
    HFScorer,
    ScoreSpec,
    sequence_logprobs,
)
from choiceaudit.scorers._fixed_tiles import (  # noqa: E402
    FixedTileLinear,
    _pack,
    fix_tiles,
    tiled_linear,
)


def _packed_or_not(weight: Any) -> list[Any]:
    """The plain fallback always, and the packed oneDNN path where this build has it."""
    packed = _pack(weight)
    return [None] if packed is None else [None, packed]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_rows_product_is_the_same_whatever_rows_it_is_computed_with(
    one_thread: None, dtype: str
) -> None:
    kind = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(3)
    weight = torch.randn((1024, 512), generator=gen).to(kind)
    bias = torch.randn(1024, generator=gen).to(kind)
    x = torch.randn((300, 512), generator=gen).to(kind)
    for packed in _packed_or_not(weight):
        whole = tiled_linear(x, weight, bias, packed)
        assert whole.shape == (300, 1024) and whole.dtype == kind
        for lo, hi in ((0, 1), (7, 40), (33, 97), (5, 300), (250, 300)):
            assert torch.equal(tiled_linear(x[lo:hi], weight, bias, packed), whole[lo:hi])
        # batch dimensions are flattened into rows and restored
        batched = tiled_linear(x[:96].reshape(3, 32, 512), weight, bias, packed)
        assert torch.equal(batched.reshape(96, 1024), whole[:96])
        # the same product as an untiled one, up to the precision's rounding
        plain = torch.nn.functional.linear(x.float(), weight.float(), bias.float())
        torch.testing.assert_close(whole.float(), plain, rtol=2e-2, atol=0.25)


@pytest.mark.parametrize("packs", [True, False])
def test_only_a_reduced_precision_body_on_the_cpu_is_tiled(
    tiny_model: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, packs: bool
) -> None:
    """With oneDNN's reordered weight (the plain one dropped) or without (a build with no
    oneDNN: the plain weight kept), the state dict is the model's own."""
    if not packs:
        monkeypatch.setattr("choiceaudit.scorers._fixed_tiles._pack", lambda weight: None)
    full = tiny_model("llama", max_positions=64)
    assert fix_tiles(full) == 0  # float32 keeps its own kernels
    model = tiny_model("llama", max_positions=64).to(torch.bfloat16)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    linears = sum(type(m) is torch.nn.Linear for m in model.model.modules())
    assert fix_tiles(model) == linears == 2 * 7  # q, k, v, o, gate, up, down per layer
    # idempotent, and cheap: the engine calls it on every call, and a tiled layer's weight is
    # rebuilt when read, so a second walk must not read one
    with monkeypatch.context() as m:
        m.setattr(FixedTileLinear, "weight", property(lambda self: pytest.fail("weight read")))
        assert fix_tiles(model) == 0
    assert type(model.lm_head) is torch.nn.Linear  # the output head tiles its own chunks
    after = model.state_dict()  # the weights keep their names and values
    assert list(after) == list(before)
    assert all(torch.equal(after[k], v) for k, v in before.items())
    up = model.model.layers[0].mlp.up_proj
    assert isinstance(up, FixedTileLinear) and up.weight.shape == (64, 32)
    assert (up.packed is not None) == packs or up.packed is None  # a build may lack oneDNN
    x = torch.randn((5, 32), generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
    plain = torch.nn.functional.linear(
        x.float(), before["model.layers.0.mlp.up_proj.weight"].float()
    )
    torch.testing.assert_close(up(x).float(), plain, rtol=2e-2, atol=0.1)


def _groups(n: int) -> list[list[ScoreSpec]]:
    rng = np.random.default_rng(5)
    out = []
    for _ in range(n):
        context = [int(t) for t in rng.integers(0, 50, rng.integers(20, 90))]
        options = [[int(t) for t in rng.integers(0, 50, rng.integers(1, 12))] for _ in range(4)]
        out.append([ScoreSpec(tuple(context + o), len(context)) for o in options])
    return out


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_a_bfloat16_rows_scores_do_not_depend_on_its_batch(
    tiny_model: Callable[..., Any], one_thread: None, kind: str
) -> None:
    """Wide enough (512, MLP 1,024) that, untiled, this CPU's bfloat16 kernels change a row's
    bits with its batch; alone, in one call of all, and through a cache: the same bits."""
    model = tiny_model(kind, max_positions=256, width=512).to(torch.bfloat16)
    work = _groups(12)
    together = sequence_logprobs(model, work)
    alone = [sequence_logprobs(model, [g])[0] for g in work]
    for a, b in zip(alone, together, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
    assert isinstance(model.model.layers[0].mlp.up_proj, FixedTileLinear)


@pytest.mark.models
def test_smollm2_in_bfloat16_keeps_the_engines_contract(one_thread: None) -> None:
    """SmolLM2 in bfloat16: each query scored alone, all in one call, and again from a warm
    cache give the same bits (untiled they differed by up to 0.16 on this project's machine)."""
    from test_hf_models import signalling_like_queries

    from choiceaudit.scorers import load_causal_lm

    lm = load_causal_lm("smollm2", dtype="bfloat16")
    queries = signalling_like_queries()

    def scores(scorer: HFScorer, batch: list[Any]) -> list[np.ndarray]:
        return [np.concatenate([d.scores["sum"], d.scores["pmi"]]) for d in scorer.score(batch)]

    together = scores(HFScorer(lm), queries)
    alone = [scores(HFScorer(lm), [q])[0] for q in queries]
    cached = HFScorer(lm, engine=EngineOptions(prefix_cache_mb=256))
    scores(cached, queries)
    warm = scores(cached, queries)
    for a, b, c in zip(alone, together, warm, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(c, b)


def test_gpt2s_conv1d_layers_are_tiled_too(one_thread: None) -> None:
    """GPT-2 keeps its products in transformers' ``Conv1D`` (weight stored transposed): tiled
    like a linear layer, the same product, and a row's scores do not depend on its batch."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=50, n_positions=256, n_embd=512, n_layer=2, n_head=8, n_inner=1024
    )
    model = transformers.GPT2LMHeadModel(config).eval().to(torch.bfloat16)
    layer = model.transformer.h[0].mlp.c_fc
    x = torch.randn((70, 512), generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    want = torch.addmm(layer.bias.float(), x.float(), layer.weight.float())
    keys = list(model.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every matrix of GPT-2's body is tiled: no warning
        assert fix_tiles(model) == 2 * 4  # c_attn, c_proj, c_fc, mlp c_proj per layer
    tiled = model.transformer.h[0].mlp.c_fc
    assert isinstance(tiled, FixedTileLinear) and torch.equal(tiled.weight, layer.weight.t())
    state = model.state_dict()
    assert list(state) == keys  # the same names, in the layer's own orientation
    assert torch.equal(state["transformer.h.0.mlp.c_fc.weight"], layer.weight)
    torch.testing.assert_close(tiled(x).float(), want, rtol=2e-2, atol=0.25)
    work = _groups(6)
    together = sequence_logprobs(model, work)
    for g, b in zip(work, together, strict=True):
        for x_, y in zip(sequence_logprobs(model, [g])[0], b, strict=True):
            np.testing.assert_array_equal(x_, y)


def test_a_layer_that_cannot_be_tiled_is_warned_about(
    tiny_model: Callable[..., Any],
) -> None:
    class Scaled(nn.Module):  # a matrix product of its own, outside any linear layer
        def __init__(self, width: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.eye(width))

        def forward(self, x: Any) -> Any:
            return x @ self.weight

    model = tiny_model("llama", max_positions=64).to(torch.bfloat16)
    model.model.layers[0].extra = Scaled(32).to(torch.bfloat16)
    with pytest.warns(UserWarning, match="Scaled layers of this model are not plain linear"):
        fix_tiles(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fix_tiles(model)  # once per model
        fix_tiles(tiny_model("llama", max_positions=64))  # float32: nothing to say
