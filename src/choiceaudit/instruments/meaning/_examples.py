"""One example item per experiment, exactly as each arm received it (Tables 6, 11, 13)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from choiceaudit.instruments.meaning._analysis_results import ExampleRow
from choiceaudit.instruments.meaning._rows import MeaningRows

__all__ = ["EXAMPLE_CONDITIONS", "examples"]

#: the conditions an example table shows per experiment (E7: the item's own order only)
EXAMPLE_CONDITIONS = {"e7": ("p0123",)}


def examples(parts: Sequence[tuple[str, MeaningRows]]) -> list[ExampleRow]:
    """Tables 6, 11, 13: per experiment, the lowest item id every part with that experiment
    answered, exactly as each part received it (state, keyed options with their roles, the
    returned probabilities, the chosen key)."""
    out: list[ExampleRow] = []
    experiments = list(dict.fromkeys(e for _, rows in parts for e in rows.experiment.tolist()))
    for experiment in experiments:
        having = [(label, rows.where(experiment=experiment)) for label, rows in parts]
        having = [(label, rows) for label, rows in having if len(rows)]
        shared = set.intersection(*(set(rows.item_id.tolist()) for _, rows in having))
        if not shared:
            continue
        item = min(shared, key=lambda i: (len(i), i))
        for label, rows in having:
            cell = rows.where(item_id=item)
            wanted = EXAMPLE_CONDITIONS.get(experiment)
            for i in range(len(cell)):
                condition = str(cell.condition[i])
                if wanted is not None and condition not in wanted:
                    continue
                roles = {int(cell.gold_slot[i]): "gold"}
                if cell.literal_slot[i] >= 0:
                    roles[int(cell.literal_slot[i])] = "literal"
                keys = "ABCDEFGH"
                options = tuple(
                    (keys[s], roles.get(s, "distractor"), text, float(cell.raw_probs[i, s]))
                    for s, text in enumerate(cell.options[i])
                )
                top = np.flatnonzero(cell.credit[i] == cell.credit[i].max())
                out.append(
                    ExampleRow(
                        model=label,
                        experiment=experiment,
                        condition=condition,
                        item_id=item,
                        language=str(cell.language[i]),
                        state=str(cell.state[i]),
                        instruction_language=str(cell.language[i]),
                        options=options,
                        choice="/".join(keys[int(t)] for t in top),
                    )
                )
    return out
