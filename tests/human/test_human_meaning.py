"""Meaning items built by the meaning plan, served to people and imported as one more arm of
the meaning analysis."""

from __future__ import annotations

import json
from pathlib import Path

from starlette.testclient import TestClient
from typer.testing import CliRunner

from bagdhara_synthetic import bagdhara_record as _record
from choiceaudit.audit import analyse_runs, import_human
from choiceaudit.cli import app
from choiceaudit.human import Limits, create_app, open_study, parse_study_file
from choiceaudit.instruments.meaning import MeaningAnalysis
from choiceaudit.store import open_run, read_queries
from human.human_helpers import check_target, choices, hidden, option_slot


def test_meaning_queries_are_served_and_imported_as_an_arm(tmp_path: Path) -> None:
    corpus = tmp_path / "bagdhara.jsonl"
    corpus.write_text(
        "\n".join(json.dumps(_record(i), ensure_ascii=False) for i in range(16)) + "\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        app,
        [
            "run",
            "meaning",
            "--model",
            "fake",
            "--corpus",
            f"bagdhara:{corpus}",
            "--out",
            str(tmp_path / "runs"),
            "--experiments",
            "e1",
            "--n-items",
            "6",
            "--embedder",
            "none",
        ],
    )
    assert result.exit_code == 0, result.output
    (model_run,) = sorted((tmp_path / "runs").iterdir())
    toml = tmp_path / "study.toml"
    toml.write_text(
        'seed = 1\nattention_checks = 1\nblocks = [{ name = "population", n_items = 10, pool = "all" }]\n',
        encoding="utf-8",
    )
    spec, items, secret = open_study(model_run, tmp_path / "study", parse_study_file(toml))
    assert items.instrument == "meaning" and len(items.items) == 30  # 6 items x 5 families
    # three participants from one test client: the per-address limits are not under test here
    roomy = Limits(rate=1000, burst=1000)
    study_app = create_app(tmp_path / "study", spec, items, secret, limits=roomy)
    client = TestClient(study_app, follow_redirects=True)
    served = {q.id: q for q in read_queries(model_run / "queries.jsonl").queries}
    for pid in ("M1", "M2", "M3"):
        client.cookies.clear()
        page = client.get(f"/?PROLIFIC_PID={pid}").text
        page = client.post(
            "/consent", data={"csrf": hidden(page, "csrf"), "panel_id": pid, "consent": "yes"}
        ).text
        page = client.post("/start", data={"csrf": hidden(page, "csrf")}).text
        while 'name="choice"' in page:
            target = check_target(page)
            slot = option_slot(page, target) if target else choices(page)[0]
            if not target:  # the query's own state is shown, as the model read it
                assert any(q.state.split("\n")[0] in page for q in served.values())
            page = client.post(
                "/answer",
                data={
                    "csrf": hidden(page, "csrf"),
                    "position": hidden(page, "position"),
                    "choice": str(slot),
                },
            ).text
        assert "Thank you" in page
    people = tmp_path / "people"
    imported = import_human(tmp_path / "study", out=people)
    assert imported.participants == 3 and imported.responses == 30
    run = open_run(people)
    assert run.instrument == "meaning" and run.label == "people"
    assert {r.query.id for r in run.rows} <= set(served)
    assert all(r.query == served[r.query.id] for r in run.rows)
    (analysis,) = [r for r in analyse_runs([model_run, people]) if isinstance(r, MeaningAnalysis)]
    assert [a.label for a in analysis.arms][1] == "people"
    assert analysis.arms[1].n_rows == len(run.rows) == 30  # round-robin covers every cell once
