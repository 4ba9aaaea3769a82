"""The task constants of the meaning paper, verbatim from its released task contract.

Instruction strings (Appendix A, Table 5): one sentence per language, byte-identical across
families, experiments and arms; a cell receives the string of its language. Seeds (Appendix R,
"Seeds"): a per-experiment base added to the item id, ``random.Random(seed_base + int(id))``,
so each item's option order is reproducible and identical across arms and families. The matrix
runs under its own namespace, 21000 (Appendix R, "The matrix run").
"""

from __future__ import annotations

import random

__all__ = [
    "FAMILIES",
    "INSTRUCTIONS",
    "MATRIX_SEED",
    "OPTION_KEYS",
    "SEEDS_BN",
    "SEEDS_EN",
    "SPLIT_SEED",
    "SUBSET_FRAC",
    "SUBSET_SEED",
    "K",
    "item_rng",
]

#: Options per question; chance is 1/K = 0.250 (§4.1).
K = 4
OPTION_KEYS: tuple[str, ...] = ("A", "B", "C", "D")

INSTRUCTIONS: dict[str, str] = {
    "bn": "নিচের বাংলা বাগধারাটির প্রকৃত ভাবার্থ কোনটি?",
    "en": "What is the actual figurative meaning of this idiom?",
}

#: The distractor families of §4.2, in ladder order (the contract spells them ``D-rand`` …).
FAMILIES: tuple[str, ...] = ("d-rand", "d-surf", "d-sem", "d-lit", "d-hard")

#: Seed bases of the Bengali (open) arms: E1 ladder, E2 surface, E3 unit, E4 language, E6
#: options, E7 order.
SEEDS_BN: dict[str, int] = {"e1": 1000, "e2": 2000, "e3": 3000, "e4": 4000, "e6": 6000, "e7": 7000}

#: The commercial arm's disjoint block seeds.
SEEDS_EN: dict[str, int] = {
    "j1_order": 17000,
    "j2_lit_en": 12000,
    "j3_ceiling_en": 11000,
    "j4_bn_control": 14000,
    "j5_options_en": 16000,
}

#: The capture matrix's own seed namespace.
MATRIX_SEED = 21000

#: Lod-lille's fixed subset: ``full.sample(frac=0.10, random_state=909)``.
SUBSET_FRAC = 0.10
SUBSET_SEED = 909


#: The split seed of Appendix R, "Seeds" ("The split seed is 20261001"; the contract's
#: ``laya_split_seed``). The paper does not say what it draws; the instrument records it in
#: every run's config (``split_seed``) and draws nothing with it (see docs/instruments/meaning.md).
SPLIT_SEED = 20261001


def item_rng(seed_base: int, item_id: int | str) -> random.Random:
    """The per-item generator of the contract: ``random.Random(seed_base + int(id))``."""
    return random.Random(seed_base + int(item_id))
