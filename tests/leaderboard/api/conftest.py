"""The API tests' clients and the guard against starting a process (tests/support/api_clients.py),
and stored results to read back (tests/support/stored_results.py)."""

from tests.support.api_clients import (  # noqa: F401 (fixtures)
    admin,
    anonymous,
    no_subprocess,
    signed_in,
)
from tests.support.stored_results import recorded  # noqa: F401 (a fixture)
