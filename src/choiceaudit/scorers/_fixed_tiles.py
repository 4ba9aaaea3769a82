"""Products of one fixed shape, so a reduced-precision row's bits do not depend on its batch.

The engine's contract is that a row's scores are the same bits whatever rows are computed with
it. In float32 on the CPU that follows from batching only rows of one shape and giving every
product at least 16 rows: MKL's sgemm computes a row the same way from 16 rows up. Bfloat16
products do not have that property: oneDNN picks its blocking of the reduction by the number of
rows, so on an Intel Xeon with AMX a row of SmolLM2's MLP down-projection (1,536 → 576) rounds
differently in a product of 33 rows than in one of 1,100, and two bfloat16 runs of the same queries that batch
them differently (another cache history, another share of the parts between worker processes)
stored scores a bfloat16 step apart. Here every product of a reduced-precision model on the CPU
runs as products of exactly ``TILE`` rows (the last one padded with zeros and cut), so every
product the kernels see has one shape and a row's bits depend only on the row. Measured on the
benchmarks page: the fixed tiles cost part of what bfloat16 gains.

The weight of a tiled layer is reordered once into oneDNN's layout for ``TILE`` rows (what
PyTorch's own compiler does for a CPU linear layer), so a tile does not pay for reordering it;
where that layout is not available (a build without oneDNN, a dtype it does not take) the tiles
run through ``torch.nn.functional.linear``, which has the same fixed shape.
"""

from __future__ import annotations

import warnings
from typing import Any, cast

import torch

__all__ = ["TILE", "FixedTileLinear", "fix_tiles", "needs_fixed_tiles", "tiled_linear"]

#: rows per product. A tile of 64 rows ran the built-in models' workloads in bfloat16 faster than
#: 32 (a tile's fixed cost spread over more rows) and about as fast as 128, which pads a short
#: batch (one 32-token block of one row) four times over; measured with ``benchmarks/``.
TILE = 64

_REDUCED = (torch.bfloat16, torch.float16)


def needs_fixed_tiles(weight: torch.Tensor) -> bool:
    """Whether products with ``weight`` run in fixed tiles: a reduced precision on the CPU."""
    return weight.device.type == "cpu" and weight.dtype in _REDUCED


def _pack(weight: torch.Tensor) -> torch.Tensor | None:
    """``weight`` reordered for oneDNN products of ``TILE`` rows, or None where it cannot be."""
    if not torch.backends.mkldnn.is_available():  # type: ignore[no-untyped-call]
        return None
    try:
        packed: torch.Tensor = torch.ops.mkldnn._reorder_linear_weight(weight.detach(), TILE)
        probe = torch.zeros((TILE, weight.shape[1]), dtype=weight.dtype)
        torch.ops.mkldnn._linear_pointwise(probe, packed, None, "none", [], "")
    except (RuntimeError, AttributeError):
        return None
    return packed


def tiled_linear(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None = None,
    packed: torch.Tensor | None = None,
) -> torch.Tensor:
    """``x @ weight.T + bias`` computed ``TILE`` rows at a time (``x`` of any leading shape),
    through ``packed`` (the weight reordered by :func:`_pack`) where given, else ``weight``."""
    shape = x.shape
    flat = x.reshape(-1, shape[-1])
    rows = int(flat.shape[0])
    short = -rows % TILE
    if short:
        flat = torch.cat([flat, flat.new_zeros((short, flat.shape[1]))])
    tiles = [flat[at : at + TILE] for at in range(0, int(flat.shape[0]), TILE)]
    if packed is not None:
        parts = [
            torch.ops.mkldnn._linear_pointwise(tile, packed, bias, "none", [], "") for tile in tiles
        ]
    else:
        assert weight is not None
        parts = [torch.nn.functional.linear(tile, weight, bias) for tile in tiles]
    out = torch.cat(parts) if len(parts) > 1 else parts[0]
    return out[:rows].reshape(*shape[:-1], out.shape[-1])


class FixedTileLinear(torch.nn.Module):
    """A linear layer whose products always have ``TILE`` rows (see the module's docstring):
    made from a ``torch.nn.Linear`` or from transformers' ``Conv1D`` (GPT-2's layers, whose
    weight is stored transposed).

    Where the weight is reordered for oneDNN the layer keeps only that copy (a model's body would
    otherwise be held twice: 200 MB more for SmolLM2, 16 GB for an 8B model in bfloat16); its
    ``weight`` is then rebuilt from it when read, the same values, and a state dict still holds it
    under its name (in the original layer's orientation)."""

    def __init__(self, layer: torch.nn.Module) -> None:
        super().__init__()
        original = cast(torch.Tensor, layer.weight)
        self._conv1d = not isinstance(layer, torch.nn.Linear)
        self.bias = cast("torch.Tensor | None", layer.bias)
        product = original.detach()  # (out, in)
        if self._conv1d:
            product = product.t().contiguous()
        self.in_features = int(product.shape[1])
        self.out_features = int(product.shape[0])
        self.packed = _pack(product)
        # without the reordered copy the products read the plain weight, kept as the parameter
        self._plain = (
            None if self.packed is not None else torch.nn.Parameter(product, requires_grad=False)
        )

    @property
    def weight(self) -> torch.Tensor:
        """The weight as ``torch.nn.Linear`` holds it, ``(out, in)``."""
        if self._plain is not None:
            return self._plain
        assert self.packed is not None
        return self.packed.to_dense()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return tiled_linear(x, self._plain, self.bias, self.packed)

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        weight = self.weight if keep_vars else self.weight.detach()
        destination[prefix + "weight"] = weight.t() if self._conv1d else weight
        if self.bias is not None:
            destination[prefix + "bias"] = self.bias if keep_vars else self.bias.detach()


def _is_conv1d(module: torch.nn.Module) -> bool:
    """transformers' ``Conv1D``: ``x @ weight + bias`` with ``weight`` of shape (in, out). The
    type is asked first: reading a tiled layer's ``weight`` rebuilds it, and the engine walks a
    model's layers on every call."""
    kind = type(module)
    if kind.__name__ != "Conv1D" or not kind.__module__.startswith("transformers"):
        return False
    weight = getattr(module, "weight", None)
    return isinstance(weight, torch.Tensor) and weight.ndim == 2


def _untiled(body: torch.nn.Module) -> list[str]:
    """The kinds of layer in ``body`` that hold a matrix in a reduced precision on the CPU but
    are neither tiled nor an embedding (a lookup, no product): products this module cannot
    make batch-invariant."""
    kinds = set()
    for module in body.modules():
        if isinstance(module, (FixedTileLinear, torch.nn.Embedding)):
            continue
        weight = getattr(module, "weight", None)
        if isinstance(weight, torch.Tensor) and weight.ndim == 2 and needs_fixed_tiles(weight):
            kinds.add(type(module).__name__)
    return sorted(kinds)


def fix_tiles(model: Any) -> int:
    """Replace every plain linear layer of ``model``'s body (``torch.nn.Linear`` and
    transformers' ``Conv1D``; not its output head, which the engine's output projection tiles
    itself) by a :class:`FixedTileLinear` where its weight is a reduced precision on the CPU;
    return how many were replaced. Idempotent. A layer of another kind holding a matrix in a
    reduced precision is warned about once per model: its products may round a row by its
    batch."""
    body = getattr(model, "base_model", model)
    replaced = 0
    for module in list(body.modules()):
        for name, child in list(module.named_children()):
            plain = type(child) is torch.nn.Linear or _is_conv1d(child)
            if plain and needs_fixed_tiles(child.weight):
                setattr(module, name, FixedTileLinear(child))
                replaced += 1
    if not getattr(model, "_choiceaudit_tiles_checked", False):
        others = _untiled(body)
        if others:
            warnings.warn(
                f"reduced precision on the CPU: {', '.join(others)} layers of this model are not "
                "plain linear layers, so the engine cannot run their products in fixed tiles and "
                "a row's scores may differ by a rounding step with the rows computed with it; "
                "score in float32 where runs must agree bit for bit",
                UserWarning,
                stacklevel=2,
            )
        model._choiceaudit_tiles_checked = True
    return replaced
