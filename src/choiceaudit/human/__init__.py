"""The human condition (signalling paper §V, Appendix C): a small web application
that shows people the frozen items exactly as a chooser receives them and records their
choices, so the import (``choiceaudit.audit.import_human``) can write them into a run that every
analysis treats as one more arm.

``open_study`` creates or reopens a study directory (the study file's blocks and seed, a copy of
the items, the CSRF key); ``create_app`` is the Starlette application over its SQLite file;
``serve`` runs it with uvicorn (``Limits`` throttles it by client address and panel id;
``normalise_panel_id`` is the one rule for a panel id, at the link, consent, withdrawal and
import); ``assign`` is the seeded, balanced assignment; ``read_study``
returns everything stored, for the import and the admin export; ``withdraw`` deletes a
participant and keeps only a keyed digest of the panel id, so it is not enrolled again
(``erase=True`` keeps nothing).
"""

from choiceaudit.human._app import create_app
from choiceaudit.human._assign import Trial, assign, classification_items
from choiceaudit.human._db import (
    DB_FILE,
    Participant,
    ResponsesDB,
    TrialExport,
    Withdrawal,
    WithdrawnError,
)
from choiceaudit.human._panel_id import PANEL_ID_PATTERN, PanelIdError, normalise_panel_id
from choiceaudit.human._security import (
    ADMIN_TOKEN_ENV,
    RESUME_CODE_LENGTH,
    SESSION_COOKIE,
    resume_digest,
)
from choiceaudit.human._serve import StudyRecord, allowed_hosts_for, read_study, serve, withdraw
from choiceaudit.human._study import (
    STUDY_FILE,
    BlockJSON,
    BlockSpec,
    StudyFileJSON,
    StudyItem,
    StudyItems,
    StudySpec,
    StudySpecJSON,
    load_study_items,
    parse_study_file,
)
from choiceaudit.human._study_dir import open_study
from choiceaudit.human._throttle import KeyedLimiter, Limits, client_key

__all__ = [
    "ADMIN_TOKEN_ENV",
    "DB_FILE",
    "PANEL_ID_PATTERN",
    "RESUME_CODE_LENGTH",
    "SESSION_COOKIE",
    "STUDY_FILE",
    "BlockJSON",
    "BlockSpec",
    "KeyedLimiter",
    "Limits",
    "PanelIdError",
    "Participant",
    "ResponsesDB",
    "StudyFileJSON",
    "StudyItem",
    "StudyItems",
    "StudyRecord",
    "StudySpec",
    "StudySpecJSON",
    "Trial",
    "TrialExport",
    "Withdrawal",
    "WithdrawnError",
    "allowed_hosts_for",
    "assign",
    "classification_items",
    "client_key",
    "create_app",
    "load_study_items",
    "normalise_panel_id",
    "open_study",
    "parse_study_file",
    "read_study",
    "resume_digest",
    "serve",
    "withdraw",
]
