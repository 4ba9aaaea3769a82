"""The backend table: every backend's declared capabilities agree with what it accepts and
returns, the layers above read them (not the name), and the resume identity is the declared
one — a field a backend adds to it is checked on resume, never silently ignored."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from choiceaudit.audit import queries_for, run_scoring
from choiceaudit.errors import StoreError
from choiceaudit.files import canonical_json
from choiceaudit.scorers import (
    BACKENDS,
    DEFAULT_IDENTITY,
    FakeScorer,
    ScorerError,
    _backends,
    accepted_options,
    backend_named,
    capabilities_of,
    causal_lm_of,
    parse_model_spec,
    registered_backends,
    resume_identity,
)
from choiceaudit.store import RunStore
from choiceaudit.types import Query

#: One spec per backend: each registered backend's declared example (so a backend added to the
#: table is covered here without editing this file).
SPECS = {b.name: b.example for b in registered_backends()}


def menu_query(i: int = 0) -> Query:
    return Query(
        state=f"to spill the beans {i}",
        options=("to reveal a secret", "to cook", "to drop beans"),
        instruction="What does it mean?",
        neutral_state="",
        answer_format="key",
    )


def test_the_table_has_one_row_per_backend_and_every_spec_form_resolves_to_it() -> None:
    assert set(BACKENDS) <= set(registered_backends())
    assert len(SPECS) == len(registered_backends())
    for name, spec in SPECS.items():
        assert parse_model_spec(spec).backend == name
        assert backend_named(name).name == name
    with pytest.raises(ScorerError, match="unknown backend 'nope'"):
        backend_named("nope")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_declared_options_are_options_the_loader_takes(name: str) -> None:
    backend = backend_named(name)
    if name in ("hf", "lm-choice", "cosine"):
        pytest.importorskip("torch")
    accepted = accepted_options(SPECS[name])
    caps = backend.capabilities
    if caps.batch_option is not None:
        assert caps.batch_option in accepted
    assert ("chat_template" in accepted) is caps.chat_template
    assert ("system_prompt" in accepted) is caps.chat_template
    for option, _ in backend.required:
        assert option in accepted


def test_causal_lms_read_continuations_in_process_and_over_a_server() -> None:
    assert capabilities_of("openai:smollm2") == dataclasses.replace(
        capabilities_of("smollm2"),
        identity=capabilities_of("openai:smollm2").identity,
        batch_option=None,
        engine=False,
        local_compute=False,  # the server computes; worker processes here would not help
    )
    assert capabilities_of("openai:x").reads == "continuations"
    assert capabilities_of("lm-choice:smollm2").reads == "menu"
    assert capabilities_of("fake").reads == "menu"
    assert causal_lm_of("openai:smollm2") == "smollm2"
    assert causal_lm_of("hf:/models/x") == "hf:/models/x"
    assert causal_lm_of("sparrow") is None
    # only the in-process engine is served or wrapped by lm-choice
    assert [b.name for b in BACKENDS if b.capabilities.engine] == ["hf"]
    # worker processes help the backends that run a causal LM in the scoring process
    assert [b.name for b in BACKENDS if b.capabilities.local_compute] == ["hf", "lm-choice"]


def test_queries_for_gives_a_served_causal_lm_the_queries_it_gets_in_process() -> None:
    plan = [menu_query(i) for i in range(3)]
    remote = queries_for("openai:smollm2", plan)
    local = queries_for("smollm2", plan)
    assert [q.answer_format for q in remote] == ["text"] * 3
    assert remote == local and [q.id for q in remote] == [q.id for q in local]
    assert {q.id for q in remote}.isdisjoint(q.id for q in plan)  # the text form is another query
    assert queries_for("fake", plan) == plan
    assert queries_for("lm-choice:smollm2", plan) == plan


def test_fake_scorer_returns_the_rules_it_declares() -> None:
    (decision,) = FakeScorer().score([menu_query()])
    assert tuple(decision.scores) == capabilities_of("fake").rules


def _legacy(description: dict[str, object]) -> dict[str, object]:
    return {k: description[k] for k in DEFAULT_IDENTITY if k in description}


def test_the_declared_identity_of_an_in_process_backend_is_the_stamp_it_always_had(
    tiny_lms: dict[str, object],
) -> None:
    from choiceaudit.scorers import HFScorer

    for described in (FakeScorer().describe(), HFScorer(tiny_lms["merge"]).describe()):  # type: ignore[arg-type]
        assert canonical_json(resume_identity(described)) == canonical_json(_legacy(described))


def test_a_declared_identity_field_missing_from_the_description_is_refused() -> None:
    with pytest.raises(ScorerError, match=r"declares \['name'\] as identifying it"):
        resume_identity({"backend": "fake"})
    assert resume_identity({"backend": "fake"}, strict=False) == {"backend": "fake"}
    # a scorer that is not a registered backend keeps the default fields it has
    assert resume_identity({"backend": "reference", "name": "uniform", "decay": 2}) == {
        "backend": "reference",
        "name": "uniform",
    }


def _declare(monkeypatch: pytest.MonkeyPatch, *extra: str) -> None:
    fake = backend_named("fake")
    caps = dataclasses.replace(fake.capabilities, identity=(*fake.capabilities.identity, *extra))
    table = {**_backends._BY_NAME, "fake": dataclasses.replace(fake, capabilities=caps)}
    monkeypatch.setattr(_backends, "_BY_NAME", table)


def test_a_field_a_backend_adds_to_its_identity_is_checked_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = [menu_query(i) for i in range(4)]
    # undeclared, the temperature does not identify the fake scorer: a resume goes on
    run_scoring(FakeScorer(temperature=1.0), plan[:2], tmp_path / "a", chunk_size=2)
    summary = run_scoring(FakeScorer(temperature=2.0), plan, tmp_path / "a", chunk_size=2)
    assert summary.already_done == 2
    # declared, the same resume is refused, by the manifest and by every part's stamp
    _declare(monkeypatch, "temperature")
    run_scoring(FakeScorer(temperature=1.0), plan[:2], tmp_path / "b", chunk_size=2)
    with pytest.raises(StoreError, match="temperature"):
        run_scoring(FakeScorer(temperature=2.0), plan, tmp_path / "b", chunk_size=2)
    (tmp_path / "b" / "manifest.json").unlink()
    with pytest.raises(StoreError, match="temperature"):
        run_scoring(FakeScorer(temperature=2.0), plan, tmp_path / "b", chunk_size=2)
    summary = run_scoring(FakeScorer(temperature=1.0), plan, tmp_path / "b", chunk_size=2)
    assert summary.already_done == 2 and len(RunStore(tmp_path / "b").done_ids()) == 4


def test_a_scorer_whose_description_lacks_a_declared_field_cannot_start_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _declare(monkeypatch, "quantisation")
    with pytest.raises(ScorerError, match="quantisation"):
        run_scoring(FakeScorer(), [menu_query()], tmp_path / "run")
    assert not (tmp_path / "run" / "decisions").exists()


@pytest.mark.skipif(importlib.util.find_spec("httpx") is None, reason="httpx is not installed")
def test_an_openai_scorer_is_identified_by_the_prompt_it_sends_too() -> None:
    import httpx

    from choiceaudit.scorers import OpenAIScorer

    entry = {"id": "m", "root": "/models/m", "choiceaudit": {"dtype": "float32"}}
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, json={"object": "list", "data": [entry]})
    )
    identity = resume_identity(OpenAIScorer("http://x", "m", transport=transport).describe())
    assert identity == {
        "backend": "openai",
        "name": "openai:m",
        "model": "openai:m",
        "model_id": "/models/m",
        "weights_sha256": None,
        "revision": None,
        "dtype": "float32",
        "chat_template": None,
        "system_prompt": None,
    }


def test_a_served_model_gets_the_chat_template_default_of_the_model_it_serves() -> None:
    from choiceaudit.audit import default_chat_template

    template, why = default_chat_template("openai:smollm2")
    assert (template, why) == (
        "own",
        f"served model smollm2: {default_chat_template('smollm2')[1]}",
    )
    assert default_chat_template("openai:gemma3-270m")[0] is None  # a base model, as in process
    assert default_chat_template("openai:an-alias")[0] is None
    assert default_chat_template("fake") == (None, "fake is not a causal LM; no chat template")
