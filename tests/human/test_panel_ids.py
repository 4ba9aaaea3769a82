"""A panel id is the whole string or nothing: no trailing newline or other invisible character
makes a second person of one id, on enrolment, on withdrawal or in the study file."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from choiceaudit.errors import InputError
from choiceaudit.human import (
    PANEL_ID_PATTERN,
    create_app,
    open_study,
    parse_study_file,
    withdraw,
)
from human.human_helpers import frozen_items, hidden, study_file

# Every Unicode whitespace, control, format and separator character, the invisible ones a
# panel id could carry unnoticed.
_INVISIBLE = [
    chr(c)
    for c in range(0x110000)
    if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zs", "Zl", "Zp") or chr(c).isspace()
]


@settings(max_examples=300, deadline=None)
@given(
    base=st.from_regex(r"[A-Za-z0-9_-]{1,60}", fullmatch=True),
    extra=st.sampled_from(_INVISIBLE),
    where=st.sampled_from(["end", "start", "middle"]),
)
def test_an_id_with_an_invisible_character_is_not_an_id(base: str, extra: str, where: str) -> None:
    assert PANEL_ID_PATTERN.fullmatch(base)
    cut = len(base) // 2
    variant = {
        "end": base + extra,
        "start": extra + base,
        "middle": base[:cut] + extra + base[cut:],
    }
    assert PANEL_ID_PATTERN.fullmatch(variant[where]) is None


def test_a_trailing_newline_is_refused_at_the_link_at_consent_and_at_withdrawal(
    tmp_path: Path,
) -> None:
    items, out = frozen_items(tmp_path), tmp_path / "study"
    spec = parse_study_file(study_file(tmp_path))
    spec, study_items, secret = open_study(items, out, spec)
    client = TestClient(create_app(out, spec, study_items, secret), follow_redirects=True)
    assert client.get("/?PROLIFIC_PID=" + quote("X1\n")).status_code == 400
    page = client.get("/?PROLIFIC_PID=X1")
    assert page.status_code == 200
    token = hidden(page.text, "csrf")
    twin = client.post("/consent", data={"csrf": token, "panel_id": "X1\n", "consent": "yes"})
    assert twin.status_code == 400
    with pytest.raises(InputError, match="trailing newline"):
        withdraw(out, "X1\n")
