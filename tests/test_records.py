"""Records read from disk are checked against their types on the way in: a configuration or a
manifest whose field holds a value of another JSON type is refused naming the file and the
field, never carried into an analysis as a wrong value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bagdhara_synthetic import write_bagdhara
from choiceaudit.audit import analyse_runs, run_meaning
from choiceaudit.cli import app
from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning import MeaningConfig
from choiceaudit.instruments.signalling import SignallingConfig
from choiceaudit.types import Manifest


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"design": 5}, "config.design"),
        ({"n_items": "abc"}, "config.n_items"),
        ({"experiments": "E1"}, "config.experiments"),
        ({"n_items": True}, "config.n_items"),
        ({"n_items": 5.0}, "config.n_items"),
        ({"blocks": [{"block": "e1"}]}, "config.blocks"),  # a block lacking its fields
    ],
)
def test_a_meaning_configuration_of_the_wrong_types_is_refused(
    data: dict[str, object], field: str
) -> None:
    with pytest.raises(InputError) as caught:
        MeaningConfig.from_json(data, source="runs/x/manifest.json")
    assert caught.value.field == field and caught.value.source == "runs/x/manifest.json"
    assert str(caught.value).startswith(f"runs/x/manifest.json: {field}: ")


def test_records_of_the_right_types_read_back_exactly() -> None:
    data = {
        "instrument": "meaning",
        "design": "jev",
        "n_items": None,
        "experiments": ["e1", "e7"],
        "unknown": [1, 2],
    }
    config = MeaningConfig.from_json(data)
    assert config.experiments == ("e1", "e7") and config.to_json() == data
    signalling = {"instrument": "signalling", "seed": 3}
    assert SignallingConfig.from_json(signalling).to_json() == signalling
    with pytest.raises(InputError, match="rows: Input should be a valid integer"):
        Manifest.from_json({"rows": "12"}, source="m.json")


def test_a_run_whose_manifest_holds_a_wrong_type_is_one_error(tmp_path: Path) -> None:
    corpus = write_bagdhara(tmp_path / "b.jsonl", 12)
    (run,) = run_meaning(
        ["fake"],
        out=tmp_path / "runs",
        corpus=f"bagdhara:{corpus}",
        experiments=("e1",),
        n_items=6,
        embedder="none",
    )
    manifest = run / "manifest.json"
    data = json.loads(manifest.read_text("utf-8"))
    data["config"]["n_items"] = "six"
    manifest.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match=r"manifest\.json: config\.n_items: "):
        analyse_runs([run])
    result = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "report")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    text = " ".join(result.output.split())
    assert "manifest.json: config.n_items: Input should be a valid integer" in text
    assert not (tmp_path / "report").exists()
