"""What a row's numbers mean and the depths behind them (selectors.evidence.definitions): per-depth
speedups only against the baseline at that depth, each with its interval and verdict, a depth
row's interval said to be pooled across depths, and depth points that carry strings left out,
never breaking a page."""

from __future__ import annotations

import json
import re

import pytest

from leaderboard import selectors, services, verdicts
from leaderboard.models import Config, Run
from runner.pairing import combined_speedup
from tests.support.h200_results import load_h200_results
from tests.support.pages import text


def test_a_depth_without_a_baseline_at_that_depth_has_no_speedup():
    def point(depth: int, mean: float) -> dict:
        return {"input_tokens": depth, "decode_tokens_per_second": {"n": 2, "mean": mean}}

    run = [point(512, 300.0), point(4096, 280.0)]
    # The baseline was measured at 512 and 8192: 4096 must not borrow another depth's figure.
    baseline = [point(512, 150.0), point(8192, 100.0)]

    speedups = selectors.depth_speedups(run, baseline)

    assert speedups == [2.0, None]
    assert combined_speedup(speedups) == 2.0


def depth_point(tokens: int, mean: float, stdev: float, n: int) -> dict:
    stats = {"mean": mean, "stdev": stdev, "n": n, "ci95_low": None, "ci95_high": None}
    return {"input_tokens": tokens, "decode_tokens_per_second": stats}


def test_each_depth_gives_its_speedup_interval_and_verdict():
    from leaderboard.selectors.evidence.definitions import depth_rows

    own = [depth_point(512, 200.0, 4.0, 8), depth_point(4096, 100.0, 30.0, 4)]
    baseline = [depth_point(512, 100.0, 2.0, 8), depth_point(4096, 95.0, 30.0, 4)]

    rows = depth_rows(own, baseline)

    sharp, loose = rows
    assert sharp["speedup"] == pytest.approx(2.0)
    assert sharp["speedup_ci95_low"] < 2.0 < sharp["speedup_ci95_high"]
    assert sharp["speedup_verdict"] == verdicts.advice.FASTER
    # 100 over 95 with a wide spread on four requests each: the interval holds 1.
    assert loose["speedup_ci95_low"] < 1 < loose["speedup_ci95_high"]
    assert loose["speedup_verdict"] == verdicts.advice.UNCLEAR
    # Without a baseline at that depth: no speedup, no interval, no word.
    [alone] = depth_rows([depth_point(8192, 50.0, 1.0, 4)], baseline)
    assert alone["speedup"] is None and alone["speedup_ci95_low"] is None
    assert alone["speedup_verdict"] is None


@pytest.fixture
def h200(user, hardware) -> list[Run]:
    return load_h200_results(owner=user, hardware=hardware)


def test_a_depth_rows_interval_says_it_is_pooled_across_depths(client, h200):
    page = text(client.get("/", {"all": "1"}))
    api = client.get("/api/v1/leaderboard", {"source": "all"}).json()["results"]

    depth_row = next(r for r in api if r["protocol"] == "depth" and len(r["depths"]) == 4)
    assert depth_row["ci95_scope"] == "across depths"
    assert [d["input_tokens"] for d in depth_row["depths"]] == [512, 4096, 12288, 36864]
    assert all(d["ci95_low"] < d["mean"] < d["ci95_high"] for d in depth_row["depths"])
    assert "pooled across 4 depths" in page
    assert re.search(r'title="95% interval pooled across depths: [^"]*512 tokens: [\d.,]+ – ', page)


def test_depth_points_that_carry_strings_never_break_a_page(client, h200, hardware):
    """Rows stored before the door checked their points (or edited since) still render."""
    run = next(
        r for r in Run.objects.filter(config__protocol="depth") if len(r.raw_result["points"]) == 4
    )
    points = run.raw_result["points"]
    points[0]["decode_tokens_per_second"] = {
        "n": "2",
        "mean": "fast",
        "ci95_low": "a",
        "ci95_high": None,
    }
    points[1]["input_tokens"] = "4096"
    points[2]["acceptance_rate"] = "most"
    run.save(update_fields=["raw_result"])
    services.raise_board_version()

    other = Config.objects.exclude(pk=run.config_id).first()
    pages = ("/", "/?all=1", "/context/", f"/compare/?keys={run.config.key},{other.key}",
             f"/nmax/?target=qwen3-8b-random&hardware={hardware.slug}")  # fmt: skip
    for url in pages:
        assert client.get(url).status_code == 200, url
    rows = client.get("/api/v1/leaderboard", {"source": "all"})
    assert rows.status_code == 200
    (shown,) = [r for r in json.loads(rows.content)["results"] if r["best_run_id"] == run.pk]
    # The unreadable depths are left out, never guessed: 512 has no mean, 4096 no depth.
    assert [d["input_tokens"] for d in shown["depths"]] == [512, 12288, 36864]
    assert shown["depths"][0]["mean"] is None and shown["depths"][0]["speedup"] is None
