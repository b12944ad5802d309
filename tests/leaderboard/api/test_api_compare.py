"""GET /api/v1/compare: two to four configs side by side, each difference of mean tok/s to the
first with its 95% Welch interval; too few keys are a 400, unknown keys a 404."""

from __future__ import annotations

import pytest

from leaderboard import services
from tests.support.api_clients import SPECULATIVE
from tests.support.baselines import submit_baseline


def test_compare_gives_welch_interval_of_the_difference(
    anonymous, models, hardware, user, enqueued, make_result
):
    speculative = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    baseline_job = submit_baseline(speculative)
    services.record_result(
        job_id=baseline_job.pk, result=make_result(baseline_job.config.key, [100.0, 102.0, 98.0])
    )
    services.record_result(
        job_id=speculative.pk, result=make_result(speculative.config.key, [150.0, 160.0, 140.0])
    )
    keys = f"{baseline_job.config.key},{speculative.config.key}"

    body = anonymous.get("/api/v1/compare", {"keys": keys}).json()

    difference = body["differences"][0]
    assert difference["difference"] == pytest.approx(50.0)
    # stdevs 2 and 10, n 3 each: se = sqrt(4/3 + 100/3), Welch df = 2.157 (not rounded down to
    # 2), t(0.975, 2.157) = 4.0116.
    assert difference["ci95_low"] == pytest.approx(50.0 - 4.0116 * (104 / 3) ** 0.5, abs=0.01)
    assert difference["ci95_low"] > 0 and difference["degrees_of_freedom"] == pytest.approx(
        2.157, abs=0.01
    )
    assert [c["config"]["key"] for c in body["configs"]] == keys.split(",")
    assert anonymous.get("/api/v1/compare", {"keys": "onlyone"}).status_code == 400
    missing = anonymous.get("/api/v1/compare", {"keys": f"{keys.split(',')[0]},ffffffffffffffff"})
    assert missing.status_code == 404 and "ffffffffffffffff" in missing.json()["keys"][0]


def test_compare_s_refusals_name_the_keys_field(anonymous, db):
    too_few = anonymous.get("/api/v1/compare", {"keys": "onlyone,onlyone"})
    unknown = anonymous.get("/api/v1/compare", {"keys": "aaaaaaaaaaaaaaaa,bbbbbbbbbbbbbbbb"})

    assert too_few.status_code == 400
    assert too_few.json() == {"keys": ["give two to four distinct config keys"]}
    assert unknown.status_code == 404
    assert unknown.json() == {"keys": ["unknown config keys: aaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbb"]}
