"""The run store: a run directory of ``manifest.json`` plus Parquet decision parts, and the
JSONL query format. The store only reads and writes; scoring into a run is
:func:`choiceaudit.audit.run_scoring`. See docs/architecture.md, "The run store"."""

from choiceaudit.errors import StoreError
from choiceaudit.store._columns import read_choice_columns, stored_arm
from choiceaudit.store._queries import (
    QueryFileError,
    QueryLine,
    ReadResult,
    read_queries,
    write_queries,
)
from choiceaudit.store._repair import repair_run_dir
from choiceaudit.store._rows import SCORE_PREFIX, rows_to_table
from choiceaudit.store._run import (
    MANIFEST,
    QUERIES,
    REFUSED,
    Manifest,
    PartStamp,
    RepairReport,
    Run,
    RunRow,
    RunStore,
    open_run,
)

__all__ = [
    "MANIFEST",
    "QUERIES",
    "REFUSED",
    "SCORE_PREFIX",
    "Manifest",
    "PartStamp",
    "QueryFileError",
    "QueryLine",
    "ReadResult",
    "RepairReport",
    "Run",
    "RunRow",
    "RunStore",
    "StoreError",
    "open_run",
    "read_choice_columns",
    "read_queries",
    "repair_run_dir",
    "rows_to_table",
    "stored_arm",
    "write_queries",
]
