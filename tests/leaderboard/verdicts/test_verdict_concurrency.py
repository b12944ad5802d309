"""Concurrency verdicts: each level against the baseline's by Welch on its rounds, and the
crossover as a level interval with its uncertainty."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboard.models import LeaderboardEntry, Run
from leaderboard.verdicts.concurrency import crossover_text, level_acceptance, level_verdicts
from tests.support.pages import text
from tests.support.protocol_results import concurrency_config, concurrency_records
from tests.support.protocol_runs import (
    CONCURRENCY_BASELINE,
    CONCURRENCY_SPECULATIVE,
    LEVELS,
    import_result,
)

H200 = Path(__file__).resolve().parents[3] / "docs/gpu-results/h200-run4/call1"


def point(level: int, mean: float, stdev: float, n: int = 3) -> dict:
    return {
        "concurrency": level,
        "aggregate_tokens_per_second": {"mean": mean, "stdev": stdev, "n": n},
    }


def test_the_crossover_lies_between_the_last_clearly_faster_and_first_clearly_slower_level():
    own = [point(1, 150, 2), point(2, 250, 3), point(4, 390, 15), point(8, 500, 4)]
    base = [point(1, 100, 2), point(2, 200, 3), point(4, 400, 3), point(8, 700, 4)]
    verdicts = level_verdicts(own, base)
    assert [v.verdict for v in verdicts] == ["faster", "faster", "not established", "slower"]
    assert crossover_text(own, base) == "between 2 and 8"


def test_a_level_the_rounds_cannot_tell_leaves_the_crossover_not_established():
    own = [point(1, 150, 2), point(2, 198, 30)]
    base = [point(1, 100, 2), point(2, 200, 30)]
    assert crossover_text(own, base) == "not established"


def test_every_level_clearly_faster_means_no_crossover_within_the_levels():
    own = [point(1, 150, 2), point(4, 450, 2)]
    base = [point(1, 100, 2), point(4, 400, 2)]
    assert crossover_text(own, base) == "not within 1–4"


def test_slower_from_the_lowest_level_on_is_at_or_below_it():
    own = [point(1, 80, 2), point(2, 150, 2)]
    base = [point(1, 100, 2), point(2, 200, 2)]
    assert crossover_text(own, base) == "at or below 1"


def test_the_stored_h200_concurrency_file_gives_its_crossover_with_its_uncertainty():
    result = json.loads((H200 / "8b-dflash12-concurrency.json").read_text())
    verdicts = {v.level: v for v in level_verdicts(result["points"], result["baseline"]["points"])}
    # Level 4: 443.0 against 459.2 tok/s over three rounds each, Welch p = 0.38: not established,
    # though the runner's point estimate put the crossover there.
    assert round(verdicts[4].p, 2) == 0.38 and verdicts[4].verdict == "not established"
    assert result["summary"]["crossover_concurrency"] == 4
    assert crossover_text(result["points"], result["baseline"]["points"]) == "between 2 and 8"


# Acceptance under load, derived from the request records


def wave(level: int, round_: int, drafted: int, accepted: int, steps: int, **extra) -> list[dict]:
    """One round's requests at a level: the wave's counts shared out among its requests, each
    request's own tau null above level 1, as the runner records them."""
    records = []
    for index in range(level):
        records.append(
            {
                "phase": "measure",
                "concurrency": level,
                "round": round_,
                "draft_n": drafted // level + (index < drafted % level),
                "draft_n_accepted": accepted // level + (index < accepted % level),
                "verify_steps": steps // level + (index < steps % level),
                "accepted_per_position": [],
                "tau": None if level > 1 else 1 + accepted / steps,
                **extra,
            }
        )
    return records


def test_each_level_s_tau_and_acceptance_are_pooled_from_its_records_with_an_interval_over_rounds():
    records = (
        wave(1, 0, 40, 30, 10) + wave(1, 1, 40, 34, 10)
        + wave(4, 0, 160, 80, 40) + wave(4, 1, 160, 96, 40) + wave(4, 2, 160, 64, 40)
        + wave(4, 0, 999, 999, 1, phase="warmup")
    )  # fmt: skip
    found = level_acceptance(records)
    assert list(found) == [1, 4]
    one, four = found[1], found[4]
    assert (one.drafted, one.accepted, one.verify_steps, one.rounds) == (80, 64, 20, 2)
    assert one.acceptance == pytest.approx(64 / 80)
    assert one.tau == pytest.approx(1 + 64 / 20)
    # Every request's own tau is null at level 4; the level's is still measured.
    assert all(r["tau"] is None for r in records if r["concurrency"] == 4)
    assert four.tau == pytest.approx(1 + 240 / 120) and four.acceptance == pytest.approx(240 / 480)
    assert four.tau_rounds.n == 3
    assert four.tau_rounds.mean == pytest.approx((3.0 + 3.4 + 2.6) / 3)
    # Each interval is around its own figure (the pooled tau and acceptance), not around the
    # mean of the rounds' figures.
    low, high = four.tau_interval
    assert low < four.tau < high and (low + high) / 2 == pytest.approx(four.tau)
    low, high = four.acceptance_interval
    assert 0 <= low < four.acceptance < high <= 1


def test_tau_counts_accepted_drafts_by_position_where_the_engine_reports_them():
    records = wave(2, 0, 20, 10, 5)
    records[0]["accepted_per_position"] = [4, 2]
    records[1]["accepted_per_position"] = [3, 3]
    found = level_acceptance(records)[2]
    assert found.tau == pytest.approx(1 + 12 / 5)
    assert found.acceptance == pytest.approx(10 / 20)
    # One round: the tau has no interval (its rounds are its samples); the acceptance has its
    # Wilson interval over its 20 drafted tokens, within [0, 1] and around the figure.
    assert found.tau_interval is None
    low, high = found.acceptance_interval
    assert 0 < low < 0.5 < high < 1


def test_a_baseline_level_or_garbage_gives_no_acceptance_and_no_error():
    baseline = wave(2, 0, 0, 0, 0) + wave(2, 1, 0, 0, 0)
    assert level_acceptance(baseline)[2].tau is None
    assert level_acceptance(baseline)[2].acceptance is None
    assert level_acceptance(None) == {} and level_acceptance("x") == {}
    assert level_acceptance([{"concurrency": True}, 7, {"concurrency": None}]) == {}


def test_the_stored_h200_run_has_a_tau_at_every_level_though_no_request_above_one_has():
    result = json.loads((H200 / "8b-dflash12-concurrency.json").read_text())
    requests = [r for r in result["requests"] if r["phase"] == "measure"]
    assert all(r["tau"] is None for r in requests if r["concurrency"] > 1)
    found = level_acceptance(result["requests"])
    assert list(found) == [1, 2, 4, 8, 16]
    for level, figures in found.items():
        mine = [r for r in requests if r["concurrency"] == level]
        drafted = sum(r["draft_n"] for r in mine)
        assert figures.acceptance == sum(r["draft_n_accepted"] for r in mine) / drafted
        positions = sum(sum(r["accepted_per_position"]) for r in mine)
        assert figures.tau == pytest.approx(1 + positions / sum(r["verify_steps"] for r in mine))
        assert figures.rounds == 3
    # Synthetic acceptance (the file's draft is random weights, labelled so): the same at every level.
    assert round(found[16].tau, 3) == 6.22


# One basis for a concurrency row's figures (issue 44: the board said 1.18x and 177.51 tok/s at
# level 1 beside acceptance pooled over the levels, the run page 0.77x and 56.11) --------------


@pytest.fixture
def level_one_drafts_less(user, ranked_models, hardware, make_protocol_result) -> Run:
    """A DFlash concurrency result (levels 1, 2, 4 at 100, 150, 160 tok/s over a baseline's 60,
    120, 200) whose level 1 accepts 25% of its drafts and the others 75%."""
    config = concurrency_config(LEVELS)
    low = concurrency_records(config, CONCURRENCY_SPECULATIVE, acceptance=0.25)
    high = concurrency_records(config, CONCURRENCY_SPECULATIVE, acceptance=0.75)
    records = [r for r in low if r["concurrency"] == 1] + [r for r in high if r["concurrency"] > 1]
    result = make_protocol_result(
        config,
        records,
        concurrency_records(config.baseline(), CONCURRENCY_BASELINE, acceptance=None),
    )
    runs = import_result(user, hardware, result)
    return next(run for run in runs if run.config.key == config.key)


def test_a_concurrency_row_gives_every_figure_at_its_lowest_level_on_every_surface(
    client, level_one_drafts_less
):
    run = level_one_drafts_less
    row = LeaderboardEntry.objects.get(config=run.config)
    # The board's row: tok/s and speedup at level 1, and its acceptance there too, not the
    # 68% the three levels pool to (2 of 14 requests at 25%, 12 at 75%).
    assert row.tokens_per_second == pytest.approx(100.0, rel=0.01)
    assert row.speedup == pytest.approx(100.0 / 60.0, rel=0.01)
    assert row.acceptance_rate == pytest.approx(0.25, abs=0.02)
    assert run.acceptance_rate != pytest.approx(row.acceptance_rate, abs=0.05)
    api = client.get("/api/v1/leaderboard", {"include_flagged": "1"}).json()
    (listed,) = [r for r in api["results"] if r["config_key"] == run.config.key]
    assert listed["acceptance_rate"] == pytest.approx(row.acceptance_rate)
    # The run page says the same figures on the same basis, and says which basis.
    page = text(client.get(f"/runs/{run.pk}/"))
    assert f"<strong>{row.tokens_per_second:.2f}</strong> aggregate at concurrency 1" in page
    assert f"{row.speedup:.2f}× at concurrency 1" in page
    assert f"{row.acceptance_rate * 100:.1f}% · tau" in page
    assert "every figure at the config's lowest concurrency level" in page
