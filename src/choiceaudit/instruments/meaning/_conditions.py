"""The condition names the meaning analyses read by name, so that rows made elsewhere (an
import) can be checked before an analysis misreads them.

E2 pairs each item's ``canonical`` row with its alternatives ``alt1``, ``alt2`` …; E3 compares
``v1`` … ``v5`` with the intact ``v0``; E6 measures each option form against ``o0``. A row of
these experiments under any other name would fall out of the comparison (or pair with the wrong
row) without an error, so it is refused where it enters. Other experiments name their conditions
after what the row carries (a family, a language, a permutation), which the analyses read from
the row itself.
"""

from __future__ import annotations

import re

from choiceaudit.instruments.meaning._interventions import E3_VARIANTS
from choiceaudit.instruments.meaning._options import E6_VARIANTS

__all__ = ["condition_problem"]

_E2 = re.compile(r"canonical|alt[1-9][0-9]*")


def condition_problem(experiment: str, condition: str) -> str | None:
    """Why ``condition`` cannot be a condition of ``experiment`` (``None``: it can)."""
    if experiment == "e2" and not _E2.fullmatch(condition):
        return f"condition {condition!r} is not an E2 condition (canonical, alt1, alt2, …)"
    known = {"e3": E3_VARIANTS, "e6": E6_VARIANTS}.get(experiment)
    if known is not None and condition not in known:
        return (
            f"condition {condition!r} is not an {experiment.upper()} condition ({', '.join(known)})"
        )
    return None
