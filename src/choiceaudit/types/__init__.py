"""Core types: what a scorer sees (`Query`), what comes back (`Decision`), the items instruments
build (`Item`, `ItemSet`), and the records of a run (`RunConfig`, `Manifest`, `Arm`, `Skipped`).

Every type is a frozen dataclass validated at construction, so a malformed value fails where it
is made, not three stages later in an analysis. See docs/architecture.md, "Core types". The choice types
live in ``_choice`` and the run records in ``_run``; ``choiceaudit.types`` is the one import path.
"""

from choiceaudit.types._choice import (
    DEFAULT_TEMPLATE,
    PROB_TOLERANCE,
    AnswerFormat,
    BoolArray,
    Decision,
    FloatArray,
    IntArray,
    Item,
    ItemSet,
    Query,
    QueryRecord,
    check_query_meta,
    format_perm,
    parse_perm,
    tied_argmax,
)
from choiceaudit.types._columns import ChoiceColumns, MetaRows
from choiceaudit.types._run import Arm, ConfigT, Manifest, OtherConfigT, RunConfig, Skipped

__all__ = [
    "DEFAULT_TEMPLATE",
    "PROB_TOLERANCE",
    "AnswerFormat",
    "Arm",
    "BoolArray",
    "ChoiceColumns",
    "ConfigT",
    "Decision",
    "FloatArray",
    "IntArray",
    "Item",
    "ItemSet",
    "Manifest",
    "MetaRows",
    "OtherConfigT",
    "Query",
    "QueryRecord",
    "RunConfig",
    "Skipped",
    "check_query_meta",
    "format_perm",
    "parse_perm",
    "tied_argmax",
]
