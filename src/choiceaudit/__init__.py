"""choiceaudit: audit models that choose among caller-supplied options.

The flow is ``types → scorers → instruments → store → report`` with ``stats`` instrument-free;
see docs/architecture.md. The top-level package re-exports the core types and the scorer registry.
"""

from choiceaudit.types import Decision, Item, ItemSet, Query

__version__ = "0.1.0"

__all__ = ["Decision", "Item", "ItemSet", "Query", "__version__"]
