"""Concurrency (and categories) rows rank only among configs measured alike: a config run at
levels 1-2 measured another workload than one run at 1-16 (other levels, other waves), so the two
are in different rankings, each under its own heading; how many rounds each ran does not part
them. A concurrency row ranks by its aggregate tok/s at its lowest level."""

from __future__ import annotations

import re

import pytest

from leaderboard import selectors, services
from leaderboard.models import Config, LeaderboardEntry
from leaderboard.services.board import mark_test_weights
from leaderboard.services.configs import protocol_variant
from tests.support.protocol_results import (
    concurrency_config,
    concurrency_records,
)


@pytest.fixture
def models(models):
    mark_test_weights(models=models.values(), test_weights=False)
    return models


@pytest.fixture
def record(user, hardware, make_protocol_result, models):
    def imported(levels, speculative, baseline, **protocol):
        config = concurrency_config(levels)
        if protocol:
            config = concurrency_config(levels, protocol=config.protocol.model_dump() | protocol)
        result = make_protocol_result(
            config,
            concurrency_records(config, speculative, acceptance=0.75),
            concurrency_records(config.baseline(), baseline, acceptance=None),
        )
        services.import_runner_result(owner=user, hardware=hardware, result=result, source="t")
        return config.key

    return imported


def ranks_by_key():
    entries = selectors.leaderboard_entries(ranked_only=True)
    page = list(entries)
    ranks = selectors.page_ranks(entries, page, offset=0, ordering="tokens_per_second")
    return {entry.config.key: ranks[entry.pk].rank for entry in page}


def test_configs_of_other_levels_rank_apart_and_of_the_same_levels_together(record):
    low = record([1, 2], [100.0, 150.0], [60.0, 120.0])
    wide = record([1, 2, 4], [30.0, 40.0, 50.0], [20.0, 30.0, 40.0])
    # The same levels and lengths, measured over more rounds: the same ranking as `wide`.
    again = record([1, 2, 4], [20.0, 25.0, 30.0], [10.0, 12.0, 14.0], rounds=3)

    ranks = ranks_by_key()

    variants = dict(
        Config.objects.filter(key__in=[low, wide, again]).values_list("key", "protocol_variant")
    )
    assert variants[wide] == variants[again] != variants[low]
    # Each is ranked among its own: `low` leads its ranking, `wide` leads the other, and
    # `again` (slower, same levels) comes after `wide`, not after `low`.
    assert ranks == {low: 1, wide: 1, again: 2}
    entries = {e.config.key: e for e in LeaderboardEntry.objects.filter(config__key__in=ranks)}
    assert entries[wide].ranking_key == entries[again].ranking_key != entries[low].ranking_key
    # Ranked by aggregate tok/s at the lowest level (level 1: its rounds' tokens over wall time).
    assert {key: e.tps_definition for key, e in entries.items()} == dict.fromkeys(
        ranks, "aggregate"
    )
    assert entries[low].tokens_per_second == pytest.approx(100.0, rel=0.05)
    assert entries[wide].tokens_per_second == pytest.approx(30.0, rel=0.05)
    assert entries[again].tokens_per_second == pytest.approx(20.0, rel=0.05)


def test_the_board_names_each_ranking_by_what_it_measured(client, record):
    record([1, 2], [100.0, 150.0], [60.0, 120.0])
    record([1, 2, 4], [30.0, 40.0, 50.0], [20.0, 30.0, 40.0])

    page = client.get("/", {"protocol": "concurrency"}).content.decode()

    # Each ranking under its own heading: the workload, what is ranked, the GPU and release.
    table = re.search(r'<table class="board" id="ranking">(.*?)</table>', page, re.S).group(1)
    headings = re.findall(r'<tr class="ranking-heading"><th [^>]*>([^<]+)</th></tr>', table)
    assert headings == [
        "concurrency 1–2 (2 levels), 64 in, 32 out · aggregate tok/s at the lowest level"
        " · H200 · b11434",
        "concurrency 1–4 (3 levels), 64 in, 32 out · aggregate tok/s at the lowest level"
        " · H200 · b11434",
    ]


def test_the_variant_leaves_out_how_often_a_protocol_measures():
    base = {"name": "concurrency", "levels": [1, 2], "input_tokens": 64, "output_tokens": 32}
    assert protocol_variant(base | {"rounds": 3, "warmup": 1, "seed": 1}) == protocol_variant(
        base | {"rounds": 9, "warmup": 0, "seed": 2}
    )
    assert protocol_variant(base) != protocol_variant(base | {"levels": [1, 2, 4]})
    assert protocol_variant(base) != protocol_variant(base | {"output_tokens": 64})
    assert protocol_variant(None) == "" and protocol_variant("x") == ""


def test_the_migration_fills_the_variant_of_stored_configs_as_the_service_computes_it(migrate):
    old = migrate([("leaderboard", "0013_hub_models")]).get_model("leaderboard", "Config")
    protocol = {"name": "concurrency", "levels": [1, 2], "input_tokens": 64, "rounds": 2}
    old.objects.create(key="a" * 16, canonical={"protocol": protocol}, label="measured",
                       target_name="t", protocol="concurrency")  # fmt: skip
    old.objects.create(key="b" * 16, canonical={"source": "seed"}, label="imported",
                       target_name="t", protocol="seed-csv", self_reported=True)  # fmt: skip
    old.objects.create(key="c" * 16, canonical={"protocol": "not a dict"}, label="odd",
                       target_name="t", protocol="quick")  # fmt: skip

    new = migrate([("leaderboard", "0014_config_protocol_variant")]).get_model(
        "leaderboard", "Config"
    )
    variants = dict(new.objects.values_list("key", "protocol_variant"))
    assert variants == {"a" * 16: protocol_variant(protocol), "b" * 16: "", "c" * 16: ""}
