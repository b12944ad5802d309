"""A series is one config (`verdicts.series`): /nmax/ draws one curve per config but its n_max,
so a config measured on one thread never joins a curve of configs on all cores; and two configs
that differ in anything carry labels that say how, on the board and the charts."""

from __future__ import annotations

import pytest

from leaderboard.verdicts.series import option_words
from runner.config import BenchmarkConfig
from tests.support.measured_configs import draft_simple, measure_config
from tests.support.pages import embedded, text


def one_thread(n_max: int) -> dict:
    return draft_simple(n_max) | {"threads": 1}


@pytest.fixture
def mixed_threads(user, ranked_models, hardware, enqueued, make_result):
    """The issue's board: n_max 4 measured on one thread (100 tok/s), n_max 8 on all cores
    (60 tok/s), each against its own baseline: one curve would crown n_max 4."""
    measure_config(user, hardware, make_result, one_thread(4), [100.0, 101.0, 99.0])
    measure_config(user, hardware, make_result, draft_simple(8), [60.0, 61.0, 59.0])
    return hardware


def nmax_types(client, hardware) -> dict[str, dict]:
    page = text(client.get("/nmax/", {"target": "tiny-qwen3", "hardware": hardware.slug}))
    return {series["label"]: series for series in embedded(page, "nmax-data")["types"]}


def test_nmax_draws_configs_that_differ_in_threads_as_separate_curves(
    client, mixed_threads, user, hardware, make_result
):
    types = nmax_types(client, hardware)
    assert set(types) == {"draft-simple · self-draft · -t 1", "draft-simple · self-draft"}
    assert types["draft-simple · self-draft · -t 1"]["n_max"] == [4]
    assert types["draft-simple · self-draft"]["n_max"] == [8]
    assert types["draft-simple · self-draft"]["best_n_max"] == 8

    # One more one-thread config, faster at n_max 8: it joins the one-thread curve and crowns
    # n_max 8 there; the all-cores curve keeps its one point.
    measure_config(user, hardware, make_result, one_thread(8), [120.0, 121.0, 119.0])
    types = nmax_types(client, hardware)
    assert types["draft-simple · self-draft · -t 1"]["n_max"] == [4, 8]
    assert types["draft-simple · self-draft · -t 1"]["best_n_max"] == 8
    assert types["draft-simple · self-draft"]["n_max"] == [8]


def test_the_board_and_the_front_chart_label_a_config_by_its_threads(
    client, mixed_threads, user, hardware, make_result
):
    measure_config(user, hardware, make_result, one_thread(8), [120.0, 121.0, 119.0])
    board = text(client.get("/"))
    # Two n_max 8 rows, one of them on one thread: never one label for both.
    assert "tiny-qwen3 · draft-simple · self-draft · n_max 8 · -t 1</a>" in board
    assert "tiny-qwen3 · draft-simple · self-draft · n_max 8</a>" in board
    bars = {point["label"] for point in embedded(board, "speedup-data")["points"]}
    assert {
        "draft-simple · self-draft · -t 1 · n_max 8",
        "draft-simple · self-draft · n_max 8",
    } <= bars


def test_option_words_name_every_option_set_away_from_the_engines_default():
    config = BenchmarkConfig.model_validate(
        draft_simple(4)
        | {"threads": 1, "ctx_size": 4096, "cache_type_k": "q8_0", "flash_attn": "on"}
    )
    assert option_words(config.canonical()) == ["-t 1", "-c 4096", "-fa on", "-ctk q8_0"]
    # At the engine's defaults (the context the protocol derives included): no words.
    assert option_words(BenchmarkConfig.model_validate(draft_simple(4)).canonical()) == []
    # A seed CSV row's identity is no runner config: no words, no error.
    assert option_words({"source": "seed-leaderboard-csv", "run_name": "x"}) == []
