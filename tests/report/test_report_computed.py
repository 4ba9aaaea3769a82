"""Every table and figure of a report says what it computed — the rule, the aggregation and the
n behind its numbers — and links the documentation section, named after the table, that defines
it; the HTML shows both. Checked on reports built in the test for each kind of section."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from choiceaudit import api
from choiceaudit.gate import GateSpec
from choiceaudit.report import Computed, ReportTable, gate_section
from choiceaudit.report._generic import scoring_section
from report_docs import undocumented


def _sweeps(path: Path) -> Path:
    """Six items under every ordering of three options, gold first, two tasks."""
    lines = []
    for i in range(12):
        options = [f"answer {i}", f"other {i}", f"third {i}"]
        for perm in itertools.permutations(range(3)):
            lines.append(
                {
                    "state": f"question {i}",
                    "options": [options[p] for p in perm],
                    "perm": "".join(map(str, perm)),
                    "meta": {"gold": 0, "item_id": f"i{i}", "task": "ab"[i % 2]},
                }
            )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("computed")
    return api.score_file(_sweeps(root / "q.jsonl"), "fake", out=root / "run").summary.path


def test_the_scoring_section_says_what_each_table_computed(scored: Path) -> None:
    (analysis,) = api.analyse_runs([scored])
    section = scoring_section(analysis)  # type: ignore[arg-type]
    assert {t.name for t in section.tables} >= {"accuracy", "slot_shares", "order_audit"}
    assert undocumented([section]) == []


def test_the_gate_section_says_what_each_table_computed(scored: Path) -> None:
    spec = GateSpec("target_accuracy", 0.5, "task=a", n_resamples=100, repeats=2)
    section = gate_section(api.gate_runs([scored], spec).analysis)
    assert section.figures and section.tables
    assert undocumented([section]) == []


def test_the_html_shows_the_statement_and_links_the_definition(tmp_path: Path) -> None:
    table = ReportTable(
        "accuracy",
        "Accuracy",
        ("model", "accuracy"),
        (("m", 0.5),),
        computed=Computed("argmax of probs.", "mean over rows.", "rows.", "instruments/scoring.md"),
    )
    html = table.to_html("https://docs.example/")
    assert "Rule: argmax of probs. Aggregation: mean over rows. n: rows." in html
    assert 'href="https://docs.example/instruments/scoring/#accuracy"' in html
    assert "docs/instruments/scoring.md#accuracy" in html


def test_a_table_that_states_nothing_or_links_nowhere_is_found() -> None:
    from choiceaudit.report import Section

    bare = ReportTable("mystery", "Mystery", ("x",), ((1,),))
    lost = ReportTable(
        "lost", "Lost", ("x",), ((1,),), computed=Computed("r", "a", "n", "instruments/scoring.md")
    )
    problems = undocumented([Section("s", "S", "", tables=[bare, lost])])
    assert problems == [
        "s: table mystery states nothing it computed",
        "s: table lost links docs/instruments/scoring.md#lost, which has no such section",
    ]


def _declared() -> list[tuple[str, str, Computed]]:
    """Every statement the report modules declare at module level (constants, and the values
    of module-level dicts), with the module and name it is declared under."""
    import importlib
    import pkgutil

    import choiceaudit.report as report

    found = []
    for info in pkgutil.iter_modules(report.__path__):
        module = importlib.import_module(f"choiceaudit.report.{info.name}")
        for name, value in vars(module).items():
            values = value.items() if isinstance(value, dict) else [(name, value)]
            for key, item in values:
                if isinstance(item, Computed):
                    found.append((info.name, str(key), item))
    return found


def test_every_declared_statement_links_a_section_that_exists() -> None:
    """Tables built only on some data (a batch-1 run, an RSA sweep, a second decay family) are
    checked here, by their declarations, as well as when a report holds them."""
    from report_docs import DOCS, anchors

    declared = _declared()
    assert len(declared) >= 30
    for module, name, computed in declared:
        assert (DOCS / computed.page).is_file(), f"{module}.{name}: docs/{computed.page}"
        if computed.anchor or name.islower():
            anchor = computed.anchor or name
            assert anchor in anchors(computed.page), f"{module}.{name}: #{anchor} missing"


def test_the_signalling_section_says_what_each_table_computed(tmp_path: Path) -> None:
    from choiceaudit.report._signalling import signalling_sections

    runs = api.run_signalling(
        ["fake"],
        ["salience", "bayes", "uniform"],
        out=tmp_path / "sig",
        norms="lancaster",
        n_items=8,
        n_candidates=2000,
    )
    sections = signalling_sections(
        [a for a in api.analyse_runs(runs) if isinstance(a, api.SignallingAnalysis)]
    )
    assert sections and sections[0].tables and sections[0].figures
    assert undocumented(sections) == []


def test_the_meaning_section_says_what_each_table_computed(tmp_path: Path) -> None:
    from choiceaudit.report._meaning import meaning_sections

    runs = api.run_meaning(["fake"], out=tmp_path / "meaning", n_items=6, embedder="none")
    (analysis,) = [a for a in api.analyse_runs(runs) if isinstance(a, api.MeaningAnalysis)]
    sections = meaning_sections(analysis)
    assert len(sections[0].tables) >= 10 and sections[0].figures
    assert undocumented(sections) == []


def test_a_meaning_table_with_no_statement_stops_the_report() -> None:
    from choiceaudit.errors import AnalysisError
    from choiceaudit.report import Section
    from choiceaudit.report._meaning_computed import stated

    table = ReportTable("meaning_new_table", "New", ("x",), ((1,),))
    with pytest.raises(AnalysisError, match="meaning_new_table"):
        stated(Section("meaning", "Meaning", "", tables=[table]))
