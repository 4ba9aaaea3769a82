"""The signalling instrument's reference choosers, for callers who build one by hand.

``signalling_chooser(name, ...)`` (also exported by the package) builds any of them by the name a
run records; ``chooser_condition(name)`` is the paper's condition a chooser name belongs to. The
classes are the exact references of §III (uniform random, salience = fit-maximising, Bayes
oracle = posterior-maximising) and the cosine association chooser of the embedding conditions.
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

__all__ = [
    "BayesOracleChooser",
    "CosineChooser",
    "SalienceChooser",
    "UniformChooser",
    "chooser_condition",
    "signalling_chooser",
]
