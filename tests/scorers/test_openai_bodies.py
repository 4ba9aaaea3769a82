"""The ``openai`` scorer's JSON bodies as typed values: request bodies per wire format, and each
answer's records parsed where the JSON is read, a broken body refused naming what is missing."""

from __future__ import annotations

import pytest

from choiceaudit.scorers._openai_bodies import (
    EchoChoice,
    InvalidBody,
    PromptLogprobsChoice,
    ServedModel,
    SGLangResult,
    request_body,
)
from choiceaudit.scorers._openai_wire import parse_body

TEXT = "Hi there"


def echo_choice(**logprobs: object) -> dict[str, object]:
    lp: dict[str, object] = {
        "tokens": ["", "Hi", " there"],
        "token_logprobs": [None, -1.5, -0.25],
        "text_offset": [0, 0, 2],
    }
    lp.update(logprobs)
    return {"index": 0, "text": TEXT, "logprobs": lp, "prompt_token_ids": [1, 7, 9]}


def test_an_echoed_choice_becomes_its_tokens_logprobs_and_offsets() -> None:
    choice = EchoChoice.from_json(echo_choice())
    assert choice == EchoChoice(
        tokens=("", "Hi", " there"),
        token_logprobs=(None, -1.5, -0.25),
        text_offset=(0, 0, 2),
        text=TEXT,
        n_prompt_tokens=3,
    )
    parsed = parse_body("completions", "http://x", [TEXT], {"choices": [echo_choice()]})
    (tokens,) = parsed.tokens
    assert tokens.spans == ((0, 0), (0, 2), (2, 8))
    assert tokens.logprobs == (None, -1.5, -0.25)
    assert tokens.method == "offsets"


def test_an_offset_that_is_not_a_character_index_falls_back_to_alignment() -> None:
    parsed = parse_body(
        "completions", "http://x", [TEXT], {"choices": [echo_choice(text_offset=[0, "a", 2])]}
    )
    assert parsed.tokens[0].method == "aligned"
    assert parsed.tokens[0].spans == ((0, 0), (0, 2), (2, 8))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"choices": [{"text": TEXT}]}, "a choice has no index"),
        ({"choices": [{"index": 0, "text": TEXT}]}, "a choice has no logprobs"),
        ({"choices": [echo_choice(token_logprobs=None)]}, "token_logprobs is not a list"),
        ({"choices": [echo_choice(token_logprobs=[None, "-1", 0.0])]}, "'-1' is not a number"),
        ({"choices": [echo_choice(token_logprobs=[None, True, 0.0])]}, "True is not a number"),
        ({"choices": [echo_choice(tokens=["", 3, " there"])]}, "neither a string nor null"),
        ({"choices": []}, r"choices \[\] for 1 prompts"),
    ],
)
def test_a_broken_echo_body_is_invalid_naming_what_is_wrong(
    body: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidBody, match=message):
        parse_body("completions", "http://x", [TEXT], body)


def test_vllm_prompt_logprobs_pick_the_prompt_token_by_its_id() -> None:
    choice = {
        "index": 0,
        "prompt_token_ids": [1, 7],
        "prompt_logprobs": [
            None,
            {"7": {"logprob": -2.0, "rank": 3, "decoded_token": "Hi"}, "8": {"logprob": -0.1}},
        ],
    }
    assert PromptLogprobsChoice.from_json(choice) == PromptLogprobsChoice(
        (None, "Hi"), (None, -2.0)
    )
    choice["prompt_token_ids"] = [1, 9]
    with pytest.raises(InvalidBody, match=r"prompt_logprobs\[1\] has no 9"):
        PromptLogprobsChoice.from_json(choice)


def test_sglang_input_token_logprobs_become_texts_and_numbers() -> None:
    item = {"meta_info": {"input_token_logprobs": [[None, 1, ""], [-0.5, 7, "Hi"]]}}
    assert SGLangResult.from_json(item) == SGLangResult(("", "Hi"), (None, -0.5))
    with pytest.raises(InvalidBody, match="return_text_in_logprobs"):
        SGLangResult.from_json({"meta_info": {"input_token_logprobs": [[None, 1, None]]}})
    with pytest.raises(InvalidBody, match="no meta_info"):
        SGLangResult.from_json({"text": "Hi"})


def test_request_bodies_carry_add_special_tokens_only_when_false() -> None:
    plain = request_body("completions", "m", ["a", "b"])
    assert plain == {
        "model": "m",
        "prompt": ["a", "b"],
        "echo": True,
        "logprobs": 1,
        "max_tokens": 0,
        "temperature": 0.0,
    }
    templated = request_body(
        "vllm-prompt-logprobs", "m", ["a"], as_list=False, add_special_tokens=False
    )
    assert templated == {
        "model": "m",
        "prompt": "a",
        "prompt_logprobs": 0,
        "max_tokens": 1,
        "temperature": 0.0,
        "return_token_ids": True,
        "add_special_tokens": False,
    }
    assert list(templated)[-1] == "add_special_tokens"  # appended, as the request always had it
    with pytest.raises(ValueError, match="SGLang"):
        request_body("sglang", "m", ["a"], add_special_tokens=False)


def test_the_served_model_prefers_serve_models_own_record() -> None:
    own = {"model_id": "org/model", "weights_sha256": "ab", "tokenizer": {"class": "T"}}
    entry = {"id": "toy", "root": "/models/toy", "choiceaudit": own}
    assert ServedModel.from_entry(entry) == ServedModel(
        model_id="org/model", weights_sha256="ab", tokenizer={"class": "T"}
    )
    vllm = ServedModel.from_entry({"id": "toy", "root": "/models/toy"})
    assert vllm == ServedModel(model_id="/models/toy")
    sglang = ServedModel.from_entry({"model_path": "/m", "tokenizer_path": "/t"})
    assert sglang == ServedModel(model_id="/m", tokenizer="/t")
    assert ServedModel.from_entry(["not", "an", "object"]) == ServedModel()
