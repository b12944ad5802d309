"""selectors.evidence.energy for the board and the pages: a stored figure is read as stored (a
string is not a number), and the roofline is derived from the result's own evidence."""

from __future__ import annotations

import pytest

from leaderboard import selectors
from tests.support.stored_results import (
    ROOFLINE,
    expected_roofline,
    on_gpu,
    record_two_runs,
)


@pytest.fixture
def recorded(models, hardware, user, enqueued, make_result):
    return record_two_runs(user=user, hardware=hardware, make_result=make_result)


def test_the_board_and_pages_read_stored_figures_as_stored(recorded):
    """A figure stored as a string is not a number on any database (SQLite parses a JSON key's
    string value when one key is read alone: the board reads the whole result instead)."""
    run = recorded[0]
    on_gpu(run, joules_per_token="1.5", joules_per_accepted_token=0.25, roofline=ROOFLINE)
    expected = expected_roofline(run)

    figures = selectors.energy_by_run(run_ids=[run.pk])[run.pk]
    assert figures["joules_per_token"] is None
    assert "joules_per_accepted_token" not in figures
    assert figures["roofline_fraction"] == pytest.approx(expected["fraction"])
    run.refresh_from_db()
    page = selectors.energy_figures(run.raw_result)
    assert page["joules_per_token"] is None and "joules_per_accepted_token" not in page
    assert "prefill and any idle time" in page["definitions"]["joules_per_token"]
    assert "bytes one step reads" in page["definitions"]["roofline"]
