"""A refusal is worded from what it says as data (its pydantic error type and context, or the
runner's own kind), never from its English text."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from leaderboard.forms import worded
from runner.compatibility import TRAINING_CONTEXT
from runner.config import BenchmarkConfig, FieldMessage, field_errors


def refusals(**changes) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        BenchmarkConfig.model_validate({"target_model": "target.gguf"} | changes)
    return field_errors(caught.value)


def test_pydantic_s_errors_keep_their_type_and_limits_and_read_as_a_person_would():
    (message,) = refusals(n_max=0)["n_max"]
    assert (message.kind, message.context) == ("greater_than_equal", {"ge": 1})
    assert worded(message) == "at least 1"
    assert worded(refusals(ctx_size=300_000)["ctx_size"][0]) == "at most 262,144"
    assert worded(refusals(p_min=2.0)["p_min"][0]) == "at most 1"
    assert worded(refusals(n_max="x")["n_max"][0]) == "a whole number"
    prompt = refusals(protocol={"name": "quick", "prompt": "x" * 20_001})
    assert worded(prompt["protocol.quick.prompt"][0]) == "at most 20,000 characters"


def test_the_words_come_from_the_type_not_from_the_text():
    assert worded(FieldMessage("whatever it says", "less_than_equal", {"le": 131072})) == (
        "at most 131,072"
    )
    # pydantic's English alone, without its type, is shown as it is.
    assert worded("Input should be greater than or equal to 1") == (
        "Input should be greater than or equal to 1"
    )
    # A type whose words fit only some of its errors: a string that must not be empty.
    assert worded(FieldMessage("too short", "string_too_short", {"min_length": 1})) == "required"
    assert worded(FieldMessage("too short", "string_too_short", {"min_length": 6})) == "too short"


def test_a_context_above_the_training_context_is_worded_at_the_field_that_shows_it():
    message = FieldMessage(
        "context 40960 per slot is above the target's training context of 32768 tokens",
        TRAINING_CONTEXT,
        {"needed": 40960, "per_slot": True, "limit": 32768},
    )
    assert (
        worded(message, field="ctx_size") == "at most 32,768 for this model (its training context)"
    )
    assert worded(message, field="levels") == (
        "these settings need 40,960 tokens of context per request: at most 32,768 for this model "
        "(its training context)"
    )
