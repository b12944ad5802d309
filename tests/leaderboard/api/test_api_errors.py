"""How the API fails (leaderboard.api.errors): every refusal is JSON with the status that says
what it is, answered by the one exception handler from the services' and selectors' errors."""

from __future__ import annotations

import logging

from leaderboard import selectors, services
from leaderboard.api.errors import Conflict, exception_handler


def answer(error: Exception):
    return exception_handler(error, {})


def test_broken_json_is_400(signed_in, models, hardware):
    response = signed_in.generic(
        "POST", "/api/v1/submissions", "{not json", content_type="application/json"
    )
    assert response.status_code == 400


def test_a_limit_reached_is_429_with_retry_after_and_its_one_line():
    response = answer(
        services.LimitReached("3 submissions an hour: next at 12:00", retry_after_s=90)
    )

    assert response.status_code == 429
    assert response.data == {"detail": "3 submissions an hour: next at 12:00"}
    assert response["Retry-After"] == "90"
    assert not answer(services.LimitReached("no", retry_after_s=0)).has_header("Retry-After")


def test_a_submission_error_keeps_the_hardware_apart_and_nests_the_config_s_fields():
    refused = services.SubmissionError(
        {"hardware": ["choose the hardware to run on"], "n_max": ["out of range"]}
    )
    config_only = services.SubmissionError("the config must be a JSON object")

    assert answer(refused).status_code == 400
    assert answer(refused).data == {
        "hardware": ["choose the hardware to run on"],
        "config": {"n_max": ["out of range"]},
    }
    assert answer(config_only).data == {
        "config": {"non_field_errors": ["the config must be a JSON object"]}
    }


def test_a_duplicate_upload_is_409_and_other_service_errors_are_400_by_field():
    duplicate = services.DuplicateUploadError({"file": ["already uploaded"]})
    other = services.CsvImportError({"file": ["missing columns: avg_tps"]})

    assert (answer(duplicate).status_code, answer(duplicate).data) == (409, duplicate.errors)
    assert (answer(other).status_code, answer(other).data) == (400, other.errors)


def test_compare_s_refusals_are_under_keys_unknown_ones_a_404():
    unknown = answer(selectors.UnknownKeys(["aaaa", "bbbb"]))
    too_few = answer(selectors.WrongNumberOfKeys("Give two to four different config keys."))

    assert (unknown.status_code, unknown.data) == (
        404,
        {"keys": ["unknown config keys: aaaa, bbbb"]},
    )
    assert (too_few.status_code, too_few.data) == (
        400,
        {"keys": ["give two to four distinct config keys"]},
    )


def test_a_conflict_is_409_with_its_detail():
    response = answer(Conflict("job 7 has already succeeded"))
    assert (response.status_code, response.data) == (409, {"detail": "job 7 has already succeeded"})


def test_an_unexpected_error_is_a_logged_500_that_says_only_that(caplog):
    with caplog.at_level(logging.ERROR, logger="leaderboard.api.errors"):
        response = answer(RuntimeError("the secret path /srv/x"))

    assert response.status_code == 500
    assert response.data == {"detail": "An unexpected error occurred; it has been logged."}
    assert "secret" not in str(response.data) and "unexpected error" in caplog.text
