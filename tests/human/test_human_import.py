"""``import human``: a study's responses become a run the signalling analysis reads like any
chooser's, with per-participant strategy classification and the population curve."""

from __future__ import annotations

import random
import re
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from choiceaudit.audit import analyse_runs, import_human, run_signalling
from choiceaudit.errors import StoreError
from choiceaudit.human import DB_FILE, ResponsesDB, assign, open_study, parse_study_file
from choiceaudit.instruments.signalling import HumanAnalysis, SignallingAnalysis, load_instrument
from choiceaudit.report import build_report
from choiceaudit.store import open_run
from human.human_helpers import frozen_items, study_file

STRATEGY_OF = {"S": "salience", "B": "Bayes", "R": "random"}


def _simulate(items_dir: Path, study: Path, toml: Path, people: dict[str, str]) -> None:
    """Participants answering by a known strategy through the study's own database (the HTTP
    path is tested in test_human_app): S picks o_fit, B picks o_bayes, R picks at random;
    every attention check is passed, except by ids starting with X."""
    spec, items, secret = open_study(items_dir, study, parse_study_file(toml))
    db = ResponsesDB(study / DB_FILE, secret=secret)
    queries = items.query_by_id()
    frozen = {i.id: i for i in load_instrument(items_dir).items}
    rng = random.Random(0)
    for pid, kind in people.items():
        who = db.enrol(pid, partial(assign, spec, items, panel_id=pid))
        assert who is not None
        db.start(who)
        while (t := db.current(who)) is not None:
            q = queries[str(t.query_id)]
            assert q.perm is not None
            if t.block == "attention":
                slot = int(t.check_option or 0)
                if pid.startswith("X"):
                    slot = (slot + 1) % q.n_options
            else:
                meta = frozen[str(t.item_id)].meta
                canonical = {
                    "S": int(meta["o_fit"]),
                    "B": int(meta["o_bayes"]),
                    "R": rng.randrange(q.n_options),
                }[kind]
                slot = q.perm.index(canonical)
            assert db.answer(who, t.position, slot, 900) == "ok"
    db.close()


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("human_import")
    items, toml = frozen_items(root), study_file(root)
    people = {f"S{k}": "S" for k in range(4)} | {f"B{k}": "B" for k in range(4)}
    people |= {f"R{k}": "R" for k in range(4)} | {"X1": "S"}
    _simulate(items, root / "study", toml, people)
    run = root / "people"
    import_human(root / "study", out=run)
    uniform = run_signalling(
        [], ["uniform"], out=root / "runs", items=items, conditions=["4"], formats=["V"]
    )[0]
    return run, uniform, root


def test_the_imported_run_has_the_frozen_query_ids_and_the_choice_shares(
    imported: tuple[Path, Path, Path],
) -> None:
    run_dir, _, root = imported
    run = open_run(run_dir)
    frozen = load_instrument(root / "items")
    rendered = {
        q.id: q for q in frozen.render(conditions=["4"], formats=["V"], label_forms=["bare"])
    }
    assert run.manifest.config["chooser"] == "people"
    assert run.manifest.config["human"]["participants"] == 12
    assert run.manifest.config["human"]["excluded"]["failed an attention check"] == 1
    total = 0
    for row in run.rows:
        assert row.query == rendered[row.query.id]  # the frozen rendering, identical
        responses = row.decision.aux["responses"]
        counts = np.bincount([r["slot"] for r in responses], minlength=row.query.n_options)
        np.testing.assert_allclose(row.decision.probs, counts / counts.sum())
        assert {r["panel_id"] for r in responses} <= {f"{c}{k}" for c in "SBR" for k in range(4)}
        assert set(responses[0]) == {"panel_id", "block", "slot", "rt_ms", "server_rt_ms"}
        total += len(responses)
    assert total == 12 * 10  # attention checks are never rows; X1 left out


def test_people_are_one_more_arm_and_classified_per_participant(
    imported: tuple[Path, Path, Path],
) -> None:
    run_dir, uniform, _ = imported
    results = analyse_runs([uniform, run_dir])
    sig = [r for r in results if isinstance(r, SignallingAnalysis)]
    human = [r for r in results if isinstance(r, HumanAnalysis)]
    assert len(sig) == 1 and len(human) == 1
    choosers = {c.chooser for c in sig[0].cells}
    assert choosers == {"uniform", "people"}
    h = human[0]
    by = {p.panel_id: p for p in h.participants}
    for k in range(4):
        s, b = by[f"S{k}"], by[f"B{k}"]
        assert s.strategy == "salience" and s.o_fit_rate == 1.0 and s.fit_norm_mean == 1.0
        assert b.strategy == "Bayes" and b.o_bayes_rate == 1.0 and b.post_norm_mean == 1.0
        assert s.n_items == 6 and s.o_fit_low > s.random_o_fit_rate
    assert h.counts["salience"] == 4 and h.counts["Bayes"] == 4
    assert h.counts["random-like"] + h.counts["unclassified"] == 4
    assert "X1" not in by
    pop = h.population
    assert pop is not None and pop.n_responses > 0
    # four salience, four Bayes and four random people: between the poles
    assert 0 < pop.fit_norm_mean < 1 and 0 < pop.post_norm_mean < 1
    # the pool is 'all': responses off the analysis set are counted, never silently in the curve
    (note,) = [x for x in h.skipped if "outside the analysis set" in x.analysis]
    n_off = sum(
        1
        for q, d in open_run(run_dir).pairs()
        for r in d.aux["responses"]
        if r["block"] == "population"
        and not load_instrument(Path(run_dir) / "instrument")
        .items.by_id(str(q.meta["item_id"]))
        .meta["conflict"]
    )
    assert note.reason.startswith(f"{n_off} of ") and pop.n_responses + n_off == 12 * 4


def test_the_report_shows_people_beside_the_models(
    imported: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    run_dir, uniform, _ = imported
    index = build_report(analyse_runs([uniform, run_dir]), out=tmp_path / "report")
    html = index.read_text(encoding="utf-8")
    assert "The human condition: people beside the models" in html
    assert "per-participant strategy classification" in html
    assert (tmp_path / "report" / "tables" / "human_participants.csv").exists() or any(
        p.name.startswith("human_participants") for p in (tmp_path / "report").rglob("*.csv")
    )
    # every people's table says what it computed and links its definition
    tables = re.findall(r'<figure class="table" id="table-human_.*?</figure>', html, re.DOTALL)
    assert tables and all('class="computed"' in t for t in tables)
    assert all("instruments/signalling/#human_" in t for t in tables)


def test_an_import_never_overwrites_a_run(imported: tuple[Path, Path, Path]) -> None:
    run_dir, _, root = imported
    with pytest.raises(StoreError, match="already holds a run"):
        import_human(root / "study", out=run_dir)


def test_cli_import_human_and_serve_human_errors(
    imported: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from choiceaudit.cli import app

    _, _, root = imported
    runner = CliRunner()
    args = ["import", "human", str(root / "study"), "--out", str(tmp_path / "p")]
    r = runner.invoke(app, [*args, "--label", "people-2"])
    assert r.exit_code == 0, r.output
    assert "12 participants" in r.output and "1 failed an attention check" in r.output
    assert open_run(tmp_path / "p").label == "people-2"
    # two imports of people in one analysis are two arms, each with its own cells
    results = analyse_runs([root / "people", tmp_path / "p"])
    (sig,) = [x for x in results if isinstance(x, SignallingAnalysis)]
    assert {c.chooser for c in sig.cells} == {"people", "people-2"}
    r = runner.invoke(
        app, ["import", "human", str(tmp_path / "nope"), "--out", str(tmp_path / "q")]
    )
    assert r.exit_code == 1 and "not a study directory" in r.output
    # a new study needs a study file; the error is one line, nothing is served
    # port 0: the address is bound before the study opens, and a fixed port may be taken
    serve = ["serve-human", str(root / "items"), "--out", str(tmp_path / "s"), "--port", "0"]
    r = runner.invoke(app, serve)
    assert r.exit_code == 1 and "needs a study file" in r.output
    assert not (tmp_path / "s").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text('seed = 1\nblocks = [{ name = "classification", n_items = 999 }]\n')
    r = runner.invoke(app, [*serve, "--study", str(bad)])
    assert r.exit_code == 1 and "conflict items of the analysis set" in r.output


def test_a_study_copied_without_its_write_ahead_log_is_refused_and_left_as_it_was(
    imported: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    import shutil

    from choiceaudit.errors import InputError

    _, _, root = imported
    copy = tmp_path / "copy"
    shutil.copytree(root / "study", copy)
    for extra in copy.glob(f"{DB_FILE}-*"):
        extra.unlink()
    # what the main file holds before the log is written back: less than one page
    (copy / DB_FILE).write_bytes(b"")
    with pytest.raises(InputError, match="holds no study tables") as caught:
        import_human(copy, out=tmp_path / "run")
    message = str(caught.value)
    assert message.startswith(str(copy / DB_FILE))
    assert "participants, trials, responses missing; the file is 0 bytes" in message
    assert f"no {DB_FILE}-wal beside it" in message
    assert (copy / DB_FILE).read_bytes() == b""  # opened read-only: not rewritten
    assert not (tmp_path / "run").exists()
    assert sorted(p.name for p in copy.iterdir() if p.name.startswith(DB_FILE)) == [DB_FILE]
    # the intact study still imports through the read-only path
    result = import_human(root / "study", out=tmp_path / "intact")
    assert result.participants == 12


def test_out_naming_a_file_is_one_error_for_import_human_and_serve_human(
    imported: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from choiceaudit.cli import app

    _, _, root = imported
    a_file = tmp_path / "a_file"
    a_file.write_text("x", encoding="utf-8")
    runner = CliRunner()
    for args in (
        ["import", "human", str(root / "study")],
        ["serve-human", str(root / "items"), "--study", str(study_file(tmp_path)), "--port", "0"],
    ):
        for out in (a_file, a_file / "below"):
            r = runner.invoke(app, [*args, "--out", str(out)])
            assert r.exit_code == 1 and "Traceback" not in r.output, r.output
            assert sum(x.startswith("error:") for x in r.output.splitlines()) == 1, r.output
            assert f"{a_file}" in r.output and "is a file" in r.output, r.output
    assert a_file.read_text(encoding="utf-8") == "x"
