"""Shared helpers for the human-condition tests: a frozen lancaster item set built in the test
(no shared data needed), a study file, and a participant session driven over HTTP."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from choiceaudit.instruments.signalling import build_signalling_items, freeze_instrument
from choiceaudit.types import ItemSet

STUDY_TOML = """
seed = 11
condition = "4"
attention_checks = 1
completion_code = "C8TEST"
blocks = [
  { name = "classification", n_items = 6 },
  { name = "population", n_items = 4, pool = "all" },
]
"""


@cache
def lancaster_items() -> ItemSet:
    return build_signalling_items("lancaster", seed=3, n_candidates=2000, n_items=40).items


def frozen_items(root: Path) -> Path:
    """The lancaster item set frozen under ``root/items`` (once per directory)."""
    target = root / "items"
    if not (target / "instrument.json").exists():
        freeze_instrument(lancaster_items(), target)
    return target


def study_file(root: Path, text: str = STUDY_TOML) -> Path:
    path = root / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


def hidden(html: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert m, f"no field {name} in page"
    return m.group(1)


def choices(html: str) -> list[int]:
    return [int(v) for v in re.findall(r'name="choice" value="(\d+)"', html)]


def check_target(html: str) -> str | None:
    m = re.search(r"please choose <b>([^<]*)</b>", html)
    return m.group(1) if m else None


def option_slot(html: str, text: str) -> int:
    for slot, label in re.findall(r'name="choice" value="(\d+)" required id="choice-\d+">([^<]*)</label>', html):
        if label == text:
            return int(slot)
    raise AssertionError(f"option {text!r} not on the page")


def answer_fields(html: str, slot: int, rt: int | None = 1234) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "csrf": hidden(html, "csrf"),
        "position": hidden(html, "position"),
        "choice": str(slot),
    }
    if rt is not None:
        fields["rt_ms"] = str(rt)
    return fields
