"""Schemathesis against the live API, from the API's own OpenAPI schema.

Every operation gets valid and invalid inputs (bounded examples, a deadline), sent with a token so
that writes are exercised too. The checks: no 5xx, documented status codes and content types, and
response bodies that match the schema.
"""

from __future__ import annotations

import time

import hypothesis
import hypothesis.errors
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from leaderboard import services
from leaderboard.accounts.services import issue_api_token

EXAMPLES_PER_OPERATION = 10
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
CONFIG = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


@pytest.mark.timeout(180)
def case_label(operation) -> str:
    return getattr(operation, "label", str(operation))


def test_fuzzing_the_live_api_finds_no_server_errors_and_no_schema_violations(
    live_server, models, hardware, user, enqueued, make_result, settings
):
    settings.SPECBOARD_SUBMISSION_RATE = settings.SPECBOARD_IMPORT_RATE = "100000/hour"
    job = services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)
    services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0, 120.0, 90.0]))
    token = issue_api_token(user=user, name="tests").key
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/schema/?format=json")

    operations, examples, failures = 0, 0, []
    started = time.monotonic()
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @hypothesis.settings(
                max_examples=EXAMPLES_PER_OPERATION,
                deadline=5000,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
            def fuzz(case) -> None:
                nonlocal examples
                examples += 1
                response = case.call(headers={"Authorization": f"Token {token}"}, timeout=10)
                try:
                    case.validate_response(response, checks=CHECKS)
                except Exception as failure:  # noqa: BLE001 - collected and reported below
                    failures.append(f"{case.operation.label}: {failure}")

            try:
                fuzz()
            except hypothesis.errors.Unsatisfiable:
                # An operation that takes no input (GET /allowance) has no invalid input to send.
                assert mode is GenerationMode.NEGATIVE, case_label(operation)

    elapsed = time.monotonic() - started
    print(
        f"\nschemathesis: {operations} operations, {examples} examples, "
        f"{len(failures)} failures in {elapsed:.1f} s"
    )
    assert operations >= 20
    assert failures == [], "\n\n".join(failures[:10])
