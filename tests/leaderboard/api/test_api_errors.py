"""How the API fails (leaderboard.api.errors): every refusal is JSON with the status that says
what it is, answered by the one exception handler from the services' and selectors' errors;
malformed JSON of any kind is a 400, an odd or traversing path a JSON 404, an odd query string
never breaks an endpoint, and an unexpected error is a JSON 500 that is logged."""

from __future__ import annotations

import logging

import pytest
from rest_framework.test import APIClient

from leaderboard import selectors, services
from leaderboard.api.errors import Conflict, exception_handler
from tests.support.api_clients import post_csv, row_counts
from tests.support.pages import ODD_QUERIES, answers_well
from tests.support.seed_kit import SEED_CSV

# A queued job whose pages the odd queries are asked of too.
QUEUED = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 8}}


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


# Malformed requests and odd paths -------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "{not json",
        '{"config": ',
        '{"config": {"target_model": NaN}}',
        '{"config": Infinity}',
        '"\\ud800"',
        "[" * 100_000,
        "\x00\x01\x02",
    ],
)
def test_malformed_json_is_400(signed_in, models, hardware, raw):
    before = row_counts()
    response = signed_in.generic(
        "POST", "/api/v1/submissions", raw, content_type="application/json"
    )
    assert response.status_code == 400 and "detail" in response.json()
    assert row_counts() == before


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/configs/..%2F..%2Fetc%2Fpasswd",
        "/api/v1/configs/../../etc/passwd",
        "/api/v1/runs/99999999999999999999999",
        "/api/v1/jobs/-1",
        "/api/v1/exports/runs/1/../../../etc/passwd",
        "/api/v1/no/such/thing",
    ],
)
def test_path_traversal_and_odd_paths_are_json_404s(signed_in, db, path):
    response = signed_in.get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")


def test_unexpected_errors_are_json_and_logged(signed_in, db, monkeypatch, caplog):
    def explode(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(services, "import_leaderboard_csv", explode)
    signed_in.raise_request_exception = False
    response = post_csv(signed_in, SEED_CSV.read_bytes())

    assert response.status_code == 500
    assert response.json() == {"detail": "An unexpected error occurred; it has been logged."}
    assert "boom" in caplog.text


# Odd query strings ----------------------------------------------------------------------------


@pytest.mark.parametrize("query", ODD_QUERIES)
@pytest.mark.parametrize(
    "path",
    ["/api/v1/hosts", "/api/v1/concurrency", "/api/v1/model-requests", "/api/v1/submissions"],
)
@pytest.mark.parametrize("as_user", [True, False], ids=["signed-in", "anonymous"])
def test_odd_query_parameters_never_break_an_endpoint(
    user, models, hardware, enqueued, path, query, as_user
):
    job = services.submit_config(owner=user, data=QUEUED, hardware_slug=hardware.slug)
    client = APIClient()
    if as_user:
        client.force_login(user)

    assert answers_well(client.get(f"{path}?{query}"))
    assert answers_well(client.get(f"/api/v1/jobs/{job.pk}?{query}"))
    assert answers_well(client.get(f"/jobs/{job.pk}/?{query}"))
