"""The run store: a run directory of ``manifest.json`` plus Parquet decision parts, and the
JSONL query format. See DESIGN.md, "The run store"."""

from choiceaudit.store._queries import (
    QueryFileError,
    QueryLine,
    ReadResult,
    read_queries,
    write_queries,
)
from choiceaudit.store._rows import SCORE_PREFIX, rows_to_table
from choiceaudit.store._run import IDENTITY_FIELDS, RunStore, RunSummary, StoreError, run_scoring

__all__ = [
    "IDENTITY_FIELDS",
    "SCORE_PREFIX",
    "QueryFileError",
    "QueryLine",
    "ReadResult",
    "RunStore",
    "RunSummary",
    "StoreError",
    "read_queries",
    "rows_to_table",
    "run_scoring",
    "write_queries",
]
