"""The site's own baseline (`verdicts.baselines`, issue 42): a result that brings a baseline the
site's measurements of that baseline config contradict beyond their intervals is not ranked,
crowned or offered; its speedup divides by the site's baseline, and the row says why."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from leaderboard.models import LeaderboardEntry
from leaderboard.verdicts import Sample, baseline_dispute
from runner.config import BenchmarkConfig
from tests.support.baselines import with_baseline_section
from tests.support.measured_configs import draft_simple

SPECULATIVE = BenchmarkConfig.model_validate(draft_simple(4))
BASELINE = SPECULATIVE.baseline()
# The site measured the baseline at about 300 tok/s; the file says 100 (a third of it) and its
# config 750: 7.5x over its own baseline, 2.5x over the site's.
SITE_BASELINE = [296.0, 300.0, 304.0]
OWN_BASELINE = [99.0, 100.0, 101.0]
SPECULATIVE_DECODE = [748.0, 750.0, 752.0]


def test_a_baseline_inside_the_sites_span_agrees():
    site = [Sample(mean=300.0, stdev=4.0, n=3), Sample(mean=280.0, stdev=None, n=1)]

    assert baseline_dispute(Sample(mean=290.0, stdev=5.0, n=3), site) == ""
    # Without spread a batch counts by its mean: 281 lies inside 280..(300's upper end).
    assert baseline_dispute(Sample(mean=281.0, stdev=None, n=1), site) == ""


def test_a_baseline_a_third_of_the_sites_is_disputed_with_its_figures():
    reason = baseline_dispute(
        Sample(mean=100.0, stdev=1.0, n=3), [Sample(mean=300.0, stdev=4.0, n=3)]
    )

    assert reason.startswith("its own baseline, 100.0 tok/s")
    assert "the site's 1 measurement of it" in reason and "not ranked until they agree" in reason


def test_nothing_to_compare_is_no_dispute():
    assert baseline_dispute(None, [Sample(mean=300.0, stdev=4.0, n=3)]) == ""
    assert baseline_dispute(Sample(mean=100.0, stdev=1.0, n=3), [None]) == ""


def import_file(tmp_path, user, result: dict, name: str) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(result))
    out = StringIO()
    call_command(
        "import_runner_results",
        str(path),
        "--hardware",
        "NVIDIA H200",
        "--user",
        user.username,
        stdout=out,
    )
    return out.getvalue()


@pytest.fixture
def site_baseline(tmp_path, user, ranked_models, hardware, make_result) -> None:
    """The site's own measurements of the baseline config on the H200, release b11434."""
    import_file(tmp_path, user, make_result(BASELINE, SITE_BASELINE), "baseline.json")


def crafted(make_result, own_baseline: list[float]) -> dict:
    """A file that passes every arithmetic check: its speedup is what its own sections give."""
    return with_baseline_section(
        make_result(SPECULATIVE, SPECULATIVE_DECODE, draft=(40, 30), tau=2.2),
        make_result(BASELINE, own_baseline),
    )


def test_a_file_whose_own_baseline_is_a_third_of_the_sites_does_not_rank_at_its_speedup(
    site_baseline, tmp_path, user, make_result, client: Client
):
    result = crafted(make_result, OWN_BASELINE)
    assert result["summary"]["speedup"] == pytest.approx(7.5)
    import_file(tmp_path, user, result, "crafted.json")

    entry = LeaderboardEntry.objects.get(config__key=SPECULATIVE.key)
    # The site's data gives 2.5x, the row says why it is kept off, and nothing ranks it.
    assert entry.speedup == pytest.approx(2.5)
    assert entry.baseline_disputed and entry.rank is None
    assert "disagrees with the site's 1 measurement" in entry.pairing_note
    assert entry.baseline_run.decode_mean == pytest.approx(300.0)

    front = client.get("/").content.decode()
    assert "7.50×" not in front
    assert "kept off the ranking: baseline disputed" in front
    for path, query in (
        ("/best/", {"target": "tiny-qwen3", "memory_gb": "141"}),
        ("/nmax/", {"target": "tiny-qwen3"}),
    ):
        page = client.get(path, query).content.decode()
        assert SPECULATIVE.key not in page, path
        assert "7.50×" not in page, path
    api = client.get("/api/v1/leaderboard").json()["results"]
    assert SPECULATIVE.key not in json.dumps(api)
    everything = client.get("/api/v1/leaderboard", {"source": "all"}).json()["results"]
    (row,) = [r for r in everything if SPECULATIVE.key in json.dumps(r)]
    assert row["rank"] is None and row["speedup"] == pytest.approx(2.5, rel=0.02)


def test_a_file_whose_own_baseline_agrees_with_the_sites_ranks_over_its_own(
    site_baseline, tmp_path, user, make_result, client: Client
):
    import_file(tmp_path, user, crafted(make_result, [298.0, 301.0, 303.0]), "honest.json")

    entry = LeaderboardEntry.objects.get(config__key=SPECULATIVE.key)
    assert not entry.baseline_disputed and entry.rank == 1 and entry.pairing_note == ""
    # Paired with the baseline measured in the same invocation, as before.
    assert entry.speedup == pytest.approx(750.0 / (902.0 / 3))
    # The pages the disputed row is kept off do show this one.
    best = client.get("/best/", {"target": "tiny-qwen3", "memory_gb": "141"}).content.decode()
    nmax = client.get("/nmax/", {"target": "tiny-qwen3"}).content.decode()
    assert SPECULATIVE.key in best and SPECULATIVE.key in nmax
    assert SPECULATIVE.key in json.dumps(client.get("/api/v1/leaderboard").json())


def test_a_dispute_ends_when_the_site_measures_a_baseline_that_bridges_the_two(
    site_baseline, tmp_path, user, make_result
):
    import_file(tmp_path, user, crafted(make_result, OWN_BASELINE), "crafted.json")
    assert LeaderboardEntry.objects.get(config__key=SPECULATIVE.key).baseline_disputed

    # A slow measurement whose interval reaches down to the file's (thermal throttling, say).
    import_file(tmp_path, user, make_result(BASELINE, [90.0, 200.0, 310.0]), "wide.json")

    entry = LeaderboardEntry.objects.get(config__key=SPECULATIVE.key)
    assert not entry.baseline_disputed and entry.rank == 1


# A row the site divides by its own baseline (its file brought none): 600 over 300 tok/s.
OTHER = BenchmarkConfig.model_validate(draft_simple(6))
# A file whose own baseline is a third of the site's (7.5x by its own, 2.5x by the site's), and
# one whose own is three times it (2.5x by its own, 7.5x by the site's).
LOWER = BenchmarkConfig.model_validate(draft_simple(3))
HIGHER = BenchmarkConfig.model_validate(draft_simple(8))
HIGH_BASELINE = [897.0, 900.0, 903.0]
HIGHER_DECODE = [2247.0, 2250.0, 2253.0]
ROW_FIGURES = (
    "speedup",
    "speedup_ci95_low",
    "speedup_ci95_high",
    "rank",
    "baseline_run_id",
    "baseline_disputed",
)
BASELINE_FIGURES = (
    "tokens_per_second",
    "best_run_id",
    "runs_count",
    "config_mean",
    "config_ci95_low",
    "config_ci95_high",
    "pooled_mean",
    "pooled_n",
    "baseline_disputed",
)


def board_figures(client: Client) -> dict:
    """Every row's speedup and standing, the baseline row's figures, and what the pages and the
    API show of the site's other row."""
    rows = {
        key: figures
        for key, *figures in LeaderboardEntry.objects.values_list("config__key", *ROW_FIGURES)
    }
    baseline = LeaderboardEntry.objects.filter(config__key=BASELINE.key).values(*BASELINE_FIGURES)
    api = client.get("/api/v1/leaderboard").json()["results"]
    other = client.get(f"/configs/{OTHER.key}/").content.decode()
    return {
        "rows": rows,
        "baseline": baseline.get(),
        "api": sorted((row["speedup"], row["rank"]) for row in api),
        "other page shows 2.00x": "2.00×" in other,
    }


def test_a_disputed_file_baseline_lower_or_higher_moves_no_other_rows_speedup(
    site_baseline, tmp_path, user, make_result, client: Client
):
    import_file(tmp_path, user, make_result(OTHER, [598.0, 600.0, 602.0]), "other.json")
    import_file(tmp_path, user, crafted(make_result, [298.0, 301.0, 303.0]), "agrees.json")
    before = board_figures(client)
    assert before["rows"][OTHER.key][0] == pytest.approx(2.0, rel=0.01)
    assert before["baseline"]["tokens_per_second"] == pytest.approx(301.0 - 1.0 / 3)

    lower = with_baseline_section(
        make_result(LOWER, SPECULATIVE_DECODE, draft=(40, 30), tau=2.2),
        make_result(BASELINE, OWN_BASELINE),
    )
    higher = with_baseline_section(
        make_result(HIGHER, HIGHER_DECODE, draft=(40, 30), tau=2.2),
        make_result(BASELINE, HIGH_BASELINE),
    )
    assert (lower["summary"]["speedup"], higher["summary"]["speedup"]) == pytest.approx((7.5, 2.5))
    import_file(tmp_path, user, lower, "lower.json")
    import_file(tmp_path, user, higher, "higher.json")

    after = board_figures(client)
    disputed = {key: after["rows"].pop(key) for key in (LOWER.key, HIGHER.key)}
    # The site's baseline row, every other row's speedup and rank, the API's ranked rows and
    # the other row's page as before: neither file's baseline batch divides anyone.
    assert after == before
    assert after["other page shows 2.00x"]
    # Each file's row: divided by the site's baseline, kept off, and saying why.
    site = before["baseline"]["tokens_per_second"]
    for config, mean, own in ((LOWER, 750.0, "100.0"), (HIGHER, 2250.0, "900.0")):
        entry = LeaderboardEntry.objects.get(config__key=config.key)
        assert disputed[config.key][0] == pytest.approx(mean / site)
        assert entry.baseline_disputed and entry.rank is None
        assert entry.pairing_note.startswith(f"its own baseline, {own} tok/s")
        assert entry.baseline_run.decode_mean == pytest.approx(site)
    for key in (LOWER.key, HIGHER.key):
        for path, query in (
            ("/best/", {"target": "tiny-qwen3", "memory_gb": "141"}),
            ("/nmax/", {"target": "tiny-qwen3"}),
            ("/api/v1/leaderboard", {}),
        ):
            assert key not in client.get(path, query).content.decode(), (key, path)
    config_page = client.get(f"/configs/{HIGHER.key}/").content.decode()
    assert "baseline disputed" in config_page and "not ranked until they agree" in config_page


def test_two_files_whose_baselines_disagree_and_nothing_else_give_no_speedup(
    tmp_path, user, ranked_models, hardware, make_result
):
    higher = with_baseline_section(
        make_result(HIGHER, HIGHER_DECODE, draft=(40, 30), tau=2.2),
        make_result(BASELINE, HIGH_BASELINE),
    )
    import_file(tmp_path, user, crafted(make_result, OWN_BASELINE), "lower.json")
    import_file(tmp_path, user, higher, "higher.json")

    rows = {entry.config.key: entry for entry in LeaderboardEntry.objects.select_related("config")}
    # The site cannot tell which is right: neither divides, and the baseline row is kept off.
    assert rows[BASELINE.key].baseline_disputed and rows[BASELINE.key].runs_count == 2
    for key in (SPECULATIVE.key, HIGHER.key):
        assert rows[key].baseline_disputed and rows[key].speedup is None and rows[key].rank is None
