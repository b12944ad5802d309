"""How acceptance spreads over a run's requests (selectors.evidence.spread): a histogram and
percentiles computed from the stored request records (never a host's summary), and none at all
where no request drafted."""

from __future__ import annotations

import pytest

from leaderboard.models import Run
from leaderboard.selectors.evidence.spread import acceptance_spread
from tests.support.measured_configs import measured_run, set_drafts


@pytest.fixture
def spread_run(user, hardware, make_result, models) -> Run:
    """A draft-simple run of five measured requests, whose drafting each test sets."""
    return measured_run(user, hardware, make_result, [100.0, 101.0, 102.0, 103.0, 104.0])


def test_the_spread_is_counted_from_the_requests(spread_run):
    set_drafts(spread_run, [(10, 9, 4.0), (10, 2, 1.5), (10, 10, 6.0), (0, 0, None), (20, 11, 2.5)])

    spread = acceptance_spread(run=spread_run)

    assert (spread["n"], spread["drafted"], spread["without_drafts"]) == (5, 4, 1)
    counts = [b["count"] for b in spread["bins"]]
    # 20% in the 20-30% bin, 55% in 50-60%, 90% in 90-100%, and 100% in the last bin too.
    assert counts == [0, 0, 1, 0, 0, 1, 0, 0, 0, 2]
    assert spread["acceptance"]["min"] == pytest.approx(0.2)
    assert spread["acceptance"]["max"] == pytest.approx(1.0)
    assert spread["acceptance"]["median"] == pytest.approx((0.55 + 0.9) / 2)
    assert spread["tau"]["median"] == pytest.approx((2.5 + 4.0) / 2)
    assert spread["tau"]["min"] == 1.5 and spread["tau"]["max"] == 6.0


def test_a_stored_record_that_accepted_more_than_it_drafted_stays_in_the_last_bin(spread_run):
    # The door refuses such a record; one written past it still draws inside the histogram.
    set_drafts(spread_run, [(10, 30, None)] * 5)

    spread = acceptance_spread(run=spread_run)

    assert spread["bins"][-1]["count"] == 5 and spread["acceptance"]["max"] == 1.0
    assert spread["tau"] is None


def test_no_drafts_no_spread(spread_run):
    set_drafts(spread_run, [(0, 0, None)] * 5)
    assert acceptance_spread(run=spread_run) is None
    assert acceptance_spread(run=None) is None
