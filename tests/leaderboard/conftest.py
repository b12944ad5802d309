"""The shared fixtures (tests/support/fixtures.py, tests/support/gpu_kinds.py) for the service's
tests."""

from tests.support.fixtures import (  # noqa: F401 (pytest finds fixtures by name)
    category_runs,
    concurrency_runs,
    enqueued,
    first_job,
    hardware,
    host,
    job_factory,
    make_protocol_result,
    make_result,
    migrate,
    models,
    ranked_models,
    signed_by_host,
    site_settings,
    static_root,
    switch_broker,
    tiny_models,
    user,
)
from tests.support.gpu_kinds import both_rows, one_3090, two_3090s  # noqa: F401 (pytest finds fixtures by name)
