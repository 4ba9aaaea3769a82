"""The signalling instrument's reference choosers, for callers who build one by hand.

``signalling_chooser(name, ...)`` (also exported by the package) builds any of them by the name a
run records; ``chooser_condition(name)`` is the paper's condition a chooser name belongs to. The
classes are the exact references of §III (uniform random, salience = fit-maximising, Bayes
oracle = posterior-maximising) and the cosine association chooser of the embedding conditions.
``item_coverage`` counts the items of a frozen set a chooser can score (§I-B), for the run's
coverage check.
"""

from choiceaudit.instruments.signalling._chooser_factory import (
    chooser_condition,
    signalling_chooser,
)
from choiceaudit.instruments.signalling._choosers import (
    BayesOracleChooser,
    CosineChooser,
    SalienceChooser,
    UniformChooser,
)
from choiceaudit.instruments.signalling._coverage import (
    COVERAGE_CHOOSERS,
    CoverageCheck,
    analysis_item_ids,
    item_coverage,
)

__all__ = [
    "COVERAGE_CHOOSERS",
    "BayesOracleChooser",
    "CosineChooser",
    "CoverageCheck",
    "SalienceChooser",
    "UniformChooser",
    "analysis_item_ids",
    "chooser_condition",
    "item_coverage",
    "signalling_chooser",
]
