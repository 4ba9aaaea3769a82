"""Each instrument declares itself (name, configuration type, plan, run directory naming,
analysis), and its configuration type gives back exactly the JSON it read."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from choiceaudit.instruments import Instrument, run_dir_name
from choiceaudit.instruments.meaning import INSTRUMENT as MEANING
from choiceaudit.instruments.meaning import MeaningConfig
from choiceaudit.instruments.scoring import INSTRUMENT as SCORING
from choiceaudit.instruments.scoring import ScoreConfig
from choiceaudit.instruments.signalling import INSTRUMENT as SIGNALLING
from choiceaudit.instruments.signalling import SignallingConfig
from choiceaudit.types import Arm, Decision, Manifest, Query, RunConfig

SIGNALLING_JSON: dict[str, Any] = {
    "chat_template_default": {"chat_template": "own", "why": "instruct model"},
    "conditions": ["4", "5"],
    "formats": ["V", "L"],
    "instrument": "signalling",
    "items_dir": "/runs/.items",
    "items_hash": "e80f58",
    "label_forms": ["bare"],
    "model": "smollm2",
    "n_items": 16,
    "norms": "lancaster",
    "seed": 20260901,
}
MEANING_JSON: dict[str, Any] = {
    "instrument": "meaning",
    "corpus": "idioms-en",
    "design": None,  # a stored null is part of the configuration's hash
    "blocks": [
        {
            "block": "e1",
            "experiment": "e1",
            "language": "en",
            "seed_base": 1000,
            "item_set": "sample",
            "n_items": 20,
            "families": None,
        }
    ],
    "experiments": ["e1", "e7"],
    "families_left_out": [],
    "build_reports": {
        "e1": {
            "corpus": "idioms-en",
            "experiment": "e1",
            "seed_base": 1000,
            "sem_source": "none",
            "sem_neighbours": None,
            "families": {},
            "skipped": {"d-sem": {"no tags": 3}},
        }
    },
    "a_key_a_later_version_adds": {"x": [1, 2]},
}
IMPORT_JSON: dict[str, Any] = {
    "kind": "import",
    "source": "lm-eval",
    "files": [{"name": "a", "sha256": "00"}],
}


@pytest.mark.parametrize(
    ("config_type", "data"),
    [
        (SignallingConfig, SIGNALLING_JSON),
        (MeaningConfig, MEANING_JSON),
        (ScoreConfig, IMPORT_JSON),
        (ScoreConfig, {"kind": "score"}),
        (RunConfig, MEANING_JSON),
    ],
)
def test_config_round_trips_json_exactly(
    config_type: type[RunConfig], data: dict[str, Any]
) -> None:
    text = json.dumps(data, sort_keys=True)
    config = config_type.from_json(json.loads(text))
    assert json.dumps(config.to_json(), sort_keys=True) == text
    assert config_type.from_json(config.to_json()) == config


def test_config_fields_are_typed_attributes() -> None:
    signalling = SignallingConfig.from_json(SIGNALLING_JSON)
    assert signalling.conditions == ("4", "5")
    assert signalling.chooser is None and signalling.model == "smollm2"
    meaning = MeaningConfig.from_json(MEANING_JSON)
    assert meaning.design is None and "design" in meaning.to_json()
    assert meaning.extra == {"a_key_a_later_version_adds": {"x": [1, 2]}}
    assert ScoreConfig(kind="score").to_json() == {"kind": "score"}  # records no instrument


def test_arm_reads_its_config_as_the_instruments_type() -> None:
    q = Query(state="s", options=("a", "b"))
    manifest = Manifest(config=MEANING_JSON, status="complete")
    arm = Arm("m", "runs/x", manifest, ((q, Decision(q.id, np.array([1.0, 0.0]))),))
    assert isinstance(arm.manifest, Manifest) and arm.status == "complete"
    typed = arm.with_config(MeaningConfig)
    assert typed.config.corpus == "idioms-en" and typed.config.experiments == ("e1", "e7")
    assert typed.with_config(MeaningConfig) is typed


def test_declarations() -> None:
    assert [i.name for i in (SCORING, SIGNALLING, MEANING)] == ["score", "signalling", "meaning"]
    assert (SCORING.config_type, SIGNALLING.config_type, MEANING.config_type) == (
        ScoreConfig,
        SignallingConfig,
        MeaningConfig,
    )
    assert MEANING.run_dir("out", "lm-choice:smollm2") == Path("out/meaning-lm-choice-smollm2")
    assert SIGNALLING.run_dir("out", "rsa:swow") == Path("out/rsa-swow")
    assert SIGNALLING.run_dir("out", "hf:/models/SmolLM2/") == Path("out/hf-models-SmolLM2")
    assert run_dir_name("::") == "model"
    q = Query(state="s", options=("a", "b"))
    assert SCORING.plan([q, q]) == [q, q]


def test_a_new_instrument_is_one_declaration() -> None:
    seen: list[str] = []

    def analyse(arms: Sequence[Arm[SignallingConfig]]) -> list[str]:
        seen.extend(type(a.config).__name__ for a in arms)
        return ["result"]

    toy = Instrument("toy", SignallingConfig, analyse, plan=list, run_prefix="toy-")
    q = Query(state="s", options=("a", "b"))
    manifest = Manifest(config=SIGNALLING_JSON)
    arm = Arm("m", "runs/toy-m", manifest, ((q, Decision(q.id, np.array([0.5, 0.5]))),))
    assert toy.analyse_arms([arm]) == ["result"] and seen == ["SignallingConfig"]
    assert toy.run_dir("r", "a b") == Path("r/toy-a-b")
