"""Products of one fixed shape, so a reduced-precision row's bits do not depend on its batch.

The engine's contract is that a row's scores are the same bits whatever rows are computed with
it. In float32 on the CPU that follows from batching only rows of one shape and giving every
product at least 16 rows: MKL's sgemm computes a row the same way from 16 rows up. Bfloat16
products do not have that property: oneDNN picks its blocking of the reduction by the number of
rows, so on an Intel Xeon with AMX a row of SmolLM2's MLP product rounds differently in a
product of 33 rows than in one of 1,100, and two bfloat16 runs of the same queries that batch
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

from typing import Any

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
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    packed: torch.Tensor | None = None,
) -> torch.Tensor:
    """``x @ weight.T + bias`` computed ``TILE`` rows at a time (``x`` of any leading shape)."""
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
        parts = [torch.nn.functional.linear(tile, weight, bias) for tile in tiles]
    out = torch.cat(parts) if len(parts) > 1 else parts[0]
    return out[:rows].reshape(*shape[:-1], out.shape[-1])


class FixedTileLinear(torch.nn.Module):
    """A linear layer whose products always have ``TILE`` rows (see the module's docstring)."""

    def __init__(self, layer: torch.nn.Linear) -> None:
        super().__init__()
        self.in_features = layer.in_features
        self.out_features = layer.out_features
        # the plain weight stays for anything that reads it (a tied embedding, a state dict)
        self.weight = layer.weight
        self.bias = layer.bias
        self.packed = _pack(layer.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return tiled_linear(x, self.weight, self.bias, self.packed)


def fix_tiles(model: Any) -> int:
    """Replace every plain linear layer of ``model``'s body (not its output head, which the
    engine's output projection tiles itself) by a :class:`FixedTileLinear` where its weight is a
    reduced precision on the CPU; return how many were replaced. Idempotent."""
    body = getattr(model, "base_model", model)
    replaced = 0
    for module in list(body.modules()):
        for name, child in list(module.named_children()):
            if type(child) is torch.nn.Linear and needs_fixed_tiles(child.weight):
                setattr(module, name, FixedTileLinear(child))
                replaced += 1
    return replaced
