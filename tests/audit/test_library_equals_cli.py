"""Library = CLI: each instrument run through the public Python API and through the command
line on the same inputs gives identical run rows and identical analysis results."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from bagdhara_synthetic import write_bagdhara
from choiceaudit import Query
from choiceaudit.audit import analyse_runs, run_meaning, run_signalling, score_file
from choiceaudit.cli import app
from choiceaudit.store import RunStore, write_queries

runner = CliRunner()


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = RunStore(run_dir).read_table().to_pylist()
    return rows


def _analysis(run_dirs: list[Path], root: Path) -> str:
    """The analysis results as JSON, with the run root and the per-run manifest (times,
    command line) taken out: what must agree is every computed number."""

    def plain(obj: Any) -> Any:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return {
                f.name: plain(getattr(obj, f.name))
                for f in dataclasses.fields(obj)
                if f.name != "manifest"
            }
        if isinstance(obj, dict):
            return {str(k): plain(v) for k, v in obj.items() if k != "manifest"}
        if isinstance(obj, list | tuple):
            return [plain(v) for v in obj]
        return obj

    text = json.dumps(plain(analyse_runs(run_dirs)), sort_keys=True, default=str)
    return text.replace(str(root), "ROOT")


def test_score_api_equals_cli(tmp_path: Path) -> None:
    queries = [
        Query(
            state=f"s{i}",
            options=(f"a{i}", f"b{i}", f"c{i}"),
            perm=[(0, 1, 2), (2, 0, 1)][i % 2],
            meta={"item_id": str(i // 2), "gold": 0},
        )
        for i in range(12)
    ]
    qfile = tmp_path / "q.jsonl"
    write_queries(qfile, queries)
    score_file(qfile, "fake", out=tmp_path / "api" / "run")
    result = runner.invoke(
        app, ["score", str(qfile), "--model", "fake", "--out", str(tmp_path / "cli" / "run")]
    )
    assert result.exit_code == 0, result.output
    assert _rows(tmp_path / "api" / "run") == _rows(tmp_path / "cli" / "run")
    api = _analysis([tmp_path / "api" / "run"], tmp_path / "api")
    cli = _analysis([tmp_path / "cli" / "run"], tmp_path / "cli")
    assert api == cli and '"accuracy"' in api


def test_meaning_api_equals_cli(tmp_path: Path) -> None:
    corpus = write_bagdhara(tmp_path / "b.jsonl", 12)
    api = run_meaning(
        ["fake"],
        out=tmp_path / "api",
        corpus=f"bagdhara:{corpus}",
        experiments=["e1", "e4", "e7", "matrix"],
        n_items=6,
        n_order_items=2,
        embedder="none",
    )
    result = runner.invoke(
        app,
        [
            "run",
            "meaning",
            "--model",
            "fake",
            "--corpus",
            "bagdhara",
            "--data",
            str(corpus),
            "--out",
            str(tmp_path / "cli"),
            "--experiments",
            "e1,e4,e7,matrix",
            "--n-items",
            "6",
            "--n-order-items",
            "2",
            "--embedder",
            "none",
        ],
    )
    assert result.exit_code == 0, result.output
    cli = [tmp_path / "cli" / p.name for p in api]
    for a, c in zip(api, cli, strict=True):
        assert _rows(a) == _rows(c)
    assert _analysis(api, tmp_path / "api") == _analysis(cli, tmp_path / "cli")


def test_signalling_api_equals_cli(tmp_path: Path) -> None:
    args = {"norms": "lancaster", "n_items": 8, "n_candidates": 4000, "seed": 7}
    api = run_signalling(["fake"], ["salience", "uniform"], out=tmp_path / "api", **args)  # type: ignore[arg-type]
    result = runner.invoke(
        app,
        [
            "run",
            "signalling",
            "--norms",
            "lancaster",
            "--n-items",
            "8",
            "--n-candidates",
            "4000",
            "--seed",
            "7",
            "--model",
            "fake",
            "--chooser",
            "salience",
            "--chooser",
            "uniform",
            "--out",
            str(tmp_path / "cli"),
        ],
    )
    assert result.exit_code == 0, result.output
    cli = [tmp_path / "cli" / p.name for p in api]
    for a, c in zip(api, cli, strict=True):
        assert _rows(a) == _rows(c)
    assert _analysis(api, tmp_path / "api") == _analysis(cli, tmp_path / "cli")


def test_run_meaning_takes_a_string_root_like_run_signalling(tmp_path: Path) -> None:
    # the Python API docs' call: run_meaning([...], "runs/meaning", ...) with a str root
    corpus = write_bagdhara(tmp_path / "b.jsonl", 8)
    kwargs: dict[str, Any] = {
        "corpus": f"bagdhara:{corpus}",
        "experiments": ["e1"],
        "n_items": 4,
        "embedder": "none",
    }
    (run,) = run_meaning(["fake"], out=str(tmp_path / "m"), **kwargs)
    assert run == tmp_path / "m" / "meaning-fake" and _rows(run)
