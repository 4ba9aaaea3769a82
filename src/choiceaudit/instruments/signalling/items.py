"""The item set built step by step, for tooling that times or inspects one step (the package's
``build_signalling_items`` runs them all in one call): a norms bundle (``load_things`` or
``load_lancaster``) → the concept ``Pool`` (``build_pool``) → the property ``Tile`` s
(``load_tiles``) → candidates scored by the exact oracle under both decay families
(``generate_candidates``, one ``CandidateBlock`` per tile) → the robustness pass and the
balanced draw (``select_items``, a ``Selection``), with the conflict and tie rates the paper
reports on the candidates (``conflict_rates``, ``tie_readings``).
"""

from choiceaudit.instruments.signalling._items import (
    CandidateBlock,
    RobustnessConfig,
    generate_candidates,
)
from choiceaudit.instruments.signalling._lancaster import load_lancaster
from choiceaudit.instruments.signalling._pool import Pool, build_pool
from choiceaudit.instruments.signalling._selection import (
    Selection,
    candidate_columns,
    conflict_rates,
    select_items,
)
from choiceaudit.instruments.signalling._things import load_things
from choiceaudit.instruments.signalling._ties import tie_readings
from choiceaudit.instruments.signalling._tiles import Tile, load_tiles

__all__ = [
    "CandidateBlock",
    "Pool",
    "RobustnessConfig",
    "Selection",
    "Tile",
    "build_pool",
    "candidate_columns",
    "conflict_rates",
    "generate_candidates",
    "load_lancaster",
    "load_things",
    "load_tiles",
    "select_items",
    "tie_readings",
]
