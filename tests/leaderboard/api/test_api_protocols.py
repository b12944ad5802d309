"""GET /api/v1/concurrency (and a config's protocol figures): the levels, speedups and crossover
the protocol pages show."""

from __future__ import annotations

import pytest

from tests.support.protocol_runs import CONCURRENCY_SPEEDUPS, LEVELS, concurrency_key


def test_the_api_gives_the_same_levels_speedups_and_crossover(client, concurrency_runs):
    body = client.get("/api/v1/concurrency").json()

    assert body["target"] == "tiny-qwen3" and body["levels"] == LEVELS
    (line,) = [line for line in body["lines"] if not line["baseline"]]
    assert line["config_key"] == concurrency_key() and line["crossover"] == 4
    assert [row["speedup"] for row in line["rows"]] == pytest.approx(CONCURRENCY_SPEEDUPS, rel=1e-3)
    assert line["rows"][0]["n"] == 2 and line["rows"][0]["ci95_low"] is not None
    config = client.get(f"/api/v1/configs/{concurrency_key()}").json()
    assert config["crossover_concurrency"] == 4
    assert [row["concurrency"] for row in config["concurrency_levels"]] == LEVELS
    assert config["categories"] is None
    # The existing fields stay.
    assert config["key"] == concurrency_key() and config["protocol"] == "concurrency"
