"""The API tests' clients (tests/support/api_clients.py) and stored results to read back
(tests/support/stored_results.py)."""

from tests.support.api_clients import admin, anonymous, signed_in  # noqa: F401 (fixtures)
from tests.support.stored_results import recorded  # noqa: F401 (a fixture)
