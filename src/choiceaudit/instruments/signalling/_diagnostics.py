"""Per-arm diagnostics of the signalling analysis: the sign of condition 1's cosine hypothesis
entries (paper §IV-H1) and the parameters that cannot move an argmax (§IV-H5)."""

from __future__ import annotations

from collections.abc import Sequence

from choiceaudit.instruments.signalling._analysed_arm import AnalysedArm
from choiceaudit.instruments.signalling._results import CosineSign, InertParameter

__all__ = ["cosine_sign_records", "inert_parameters"]


def cosine_sign_records(group: Sequence[AnalysedArm]) -> tuple[CosineSign, ...]:
    """§IV-H1: mean share of negative cosine hypothesis entries over an arm's renderings."""
    out = []
    for a in group:
        shares = [
            float(d.aux["negative_hypothesis_share"])
            for _, d in a.arm.rows
            if "negative_hypothesis_share" in d.aux
        ]
        if shares:
            out.append(CosineSign(a.label, len(shares), float(sum(shares) / len(shares))))
    return tuple(out)


def inert_parameters(group: Sequence[AnalysedArm]) -> tuple[InertParameter, ...]:
    """§IV-H5: for a chooser that records a parameter sweep in its scores
    (``<score>@<param>=<value>``: the RSA layer's α, the ConceptNet decay base ``d``), the share
    of renderings whose chosen option set is identical at every swept value."""
    out = []
    for a in group:
        sweeps: dict[str, list[tuple[float, str]]] = {}
        first = next((d for _, d in a.arm.rows if d.aux.get("covered", True)), None)
        for d in [first] if first is not None else []:
            for key in d.scores:
                if "@" in key and "=" in key:
                    param, value = key.split("@", 1)[1].split("=", 1)
                    sweeps.setdefault(param, []).append((float(value), key))
        for param, keys in sweeps.items():
            keys.sort()
            same, n = 0, 0
            for _, d in a.arm.rows:
                if not d.aux.get("covered", True):
                    continue
                choices = {tuple(d.choice(k)) for _, k in keys}
                n += 1
                same += len(choices) == 1
            if n:
                out.append(InertParameter(a.label, param, tuple(v for v, _ in keys), n, same / n))
    return tuple(out)
