"""Rankings that compare only what is comparable: one ranking per workload, tok/s definition,
GPU and release, each under its heading; ranks by the sorted field within it, kept-off rows
unranked; Welch labels instead of shared ranks, none without an interval; n_max series of one
ranking against their own paired baseline, from ranked rows only; one speedup definition for
depth runs, and staleness from measured releases only. Concurrency rows rank only among
concurrency rows measured alike (their levels and lengths, not how many rounds), by aggregate
tok/s at their lowest level."""

from __future__ import annotations

import functools
import json
import re

import pytest

from leaderboard import selectors, services
from leaderboard.models import Config, EngineBuild, GpuHost, Hardware, LeaderboardEntry, Run
from runner.pairing import combined_speedup
from tests.support.board_rows import board_row as row
from tests.support.h200_results import RESULTS_DIR, load_h200_results
from tests.support.measured_configs import measure
from tests.support.protocol_runs import (
    CONCURRENCY_SPECULATIVE,
    CONCURRENCY_SPEEDUPS,
    concurrency_key,
    import_concurrency_config,
)
from tests.support.seed_kit import SEED_CSV


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def ranking(page: str, table_id: str = "ranking") -> list[tuple[str, str, str]]:
    """(rank or "–", the heading of the ranking it is under, config label) for each row of a
    board table, in page order."""
    table = re.search(rf'<table class="board" id="{table_id}">(.*?)</table>', page).group(1)
    shown, heading = [], ""
    for cells in re.findall(r"<tr[^>]*>(.*?)</tr>", table):
        if found := re.match(r' ?<th colspan="10" scope="colgroup">([^<]+)</th>', cells):
            heading = found.group(1)
            continue
        rank = re.search(r'<td class="rank">(.*?)</td>', cells)
        label = re.search(r'<td><a href="/configs/[0-9a-f]+/">([^<]+)</a>', cells)
        if rank and label:
            number = re.match(r"(\d+)", rank.group(1))
            shown.append((number.group(1) if number else "–", heading, label.group(1)))
    return shown


def rank_labels(page: str) -> dict[str, str]:
    """Each ranked row's label under its rank ("≈ leader", "≈ row above", "no interval", or "")."""
    table = re.search(r'<table class="board" id="ranking">(.*?)</table>', page).group(1)
    labels = {}
    for cells in re.findall(r"<tr[^>]*>(.*?)</tr>", table):
        rank = re.search(r'<td class="rank">(.*?)</td>', cells)
        label = re.search(r'<td><a href="/configs/[0-9a-f]+/">([^<]+)</a>', cells)
        if rank and label:
            words = re.search(r'class="sub rank-label [^"]*"[^>]*>([^<]+)<', rank.group(1))
            labels[label.group(1)] = words.group(1) if words else ""
    return labels


def json_data(page: str, element_id: str):
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page)
    return json.loads(found.group(1))


@pytest.fixture
def gpu(db) -> Hardware:
    return Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")


QUICK_DECODE = "quick · decode tok/s · GPU A · b11434"
QUICK_END_TO_END = "quick · end-to-end tok/s · GPU A · b11434"


@pytest.mark.parametrize(
    ("ordering", "expected"),
    [
        ("speedup", [("1", "c"), ("2", "a"), ("3", "b"), ("–", "d")]),
        ("acceptance_rate", [("1", "b"), ("2", "c"), ("3", "a"), ("–", "d")]),
        ("tau", [("1", "d"), ("2", "b"), ("3", "a"), ("–", "c")]),
    ],
)
def test_sorting_by_speedup_acceptance_or_tau_ranks_rows_by_that_field(
    client, gpu, ordering, expected
):
    # tok/s order a > b > c > d, far apart: no tok/s rank could hide a wrong one.
    row(gpu, "a", 400.0, speedup=2.0, acceptance_rate=0.5, tau=2.0)
    row(gpu, "b", 300.0, speedup=1.5, acceptance_rate=0.9, tau=3.0)
    row(gpu, "c", 200.0, speedup=3.0, acceptance_rate=0.7, tau=None)
    row(gpu, "d", 100.0, speedup=None, acceptance_rate=None, tau=4.0)

    shown = ranking(text(client.get("/", {"ordering": ordering})))

    assert [(rank, label) for rank, _, label in shown] == expected
    assert {heading for _, heading, _ in shown} == {QUICK_DECODE}


def test_equal_values_of_the_sorted_field_share_their_competition_rank(client, gpu):
    for label, tps, acceptance in (("a", 400.0, 0.9), ("b", 300.0, 0.8), ("c", 200.0, 0.8)):
        row(gpu, label, tps, acceptance_rate=acceptance)
    row(gpu, "d", 500.0, acceptance_rate=0.5)

    shown = ranking(text(client.get("/", {"ordering": "acceptance_rate"})))

    assert [(rank, label) for rank, _, label in shown] == [
        ("1", "a"),
        ("2", "b"),
        ("2", "c"),
        ("4", "d"),
    ]


@pytest.mark.parametrize(
    ("ordering", "expected"),
    [
        (
            "tokens_per_second",
            [
                ("1", QUICK_DECODE, "measured a"),
                ("2", QUICK_DECODE, "measured b"),
                ("–", QUICK_END_TO_END, "seed claim"),
                ("1", QUICK_END_TO_END, "e2e fast"),
                ("2", QUICK_END_TO_END, "e2e slow"),
            ],
        ),
        (
            "speedup",
            [
                ("1", QUICK_DECODE, "measured a"),
                ("2", QUICK_DECODE, "measured b"),
                ("–", QUICK_END_TO_END, "seed claim"),
                ("1", QUICK_END_TO_END, "e2e slow"),
                ("2", QUICK_END_TO_END, "e2e fast"),
            ],
        ),
    ],
)
def test_the_all_results_view_numbers_decode_and_end_to_end_rows_separately(
    client, gpu, ordering, expected
):
    row(gpu, "e2e fast", 253.0, tps_definition="end-to-end", speedup=2.0)
    row(gpu, "measured a", 100.0, speedup=2.0)
    row(gpu, "measured b", 90.0, speedup=1.8)
    row(gpu, "e2e slow", 70.0, tps_definition="end-to-end", speedup=3.6)
    # The fastest and best speedup of all, but a claim: shown in the all-results view, unranked.
    row(gpu, "seed claim", 300.0, tps_definition="end-to-end", self_reported=True, speedup=9.0)

    page = text(client.get("/", {"all": "1", "ordering": ordering}))

    assert ranking(page) == expected
    # Every row says its definition where its tok/s is.
    table = re.search(r'id="ranking">(.*?)</table>', page).group(1)
    definitions = re.findall(r'class="sub tps-definition">([^<]+)<', table)
    assert definitions == [
        "end-to-end (client wall time)" if "end-to-end" in heading else "decode (server timings)"
        for _, heading, _ in expected
    ]
    assert LeaderboardEntry.objects.get(config__label="seed claim").rank is None


def test_the_seed_kits_end_to_end_imports_never_take_a_measured_rows_rank(client, gpu):
    services.import_leaderboard_csv(content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000")
    row(gpu, "measured", 100.0, speedup=2.0)

    shown = ranking(text(client.get("/", {"all": "1"})))

    measured = [(rank, heading) for rank, heading, label in shown if label == "measured"]
    imported = [(rank, heading) for rank, heading, label in shown if label != "measured"]
    assert measured == [("1", QUICK_DECODE)]
    # The seed kit's rows are claims: shown in the all-results view under their own heading
    # (their own workload, definition and GPU), and never numbered.
    assert len(imported) >= 10 and {rank for rank, _ in imported} == {"–"}
    assert all(
        h.startswith("seed kit CSV (unverified) · end-to-end tok/s · RTX PRO 6000")
        for _, h in imported
    )
    seed_rows = LeaderboardEntry.objects.filter(self_reported=True)
    assert seed_rows.count() == len(imported) and not seed_rows.filter(rank__isnull=False).exists()


def test_a_batch_of_one_request_keeps_its_place_and_says_it_has_no_interval(client, gpu):
    row(gpu, "leader", 100.0, half=5.0)
    row(gpu, "overlapping", 97.0, half=4.0)
    # One request at 99 tok/s: inside the leader's interval, but a single request has none.
    row(gpu, "one request", 99.0, n=1)

    page = text(client.get("/"))

    # In tok/s order and ranked by it: the single request is second, the slower overlapping
    # row third, labelled as indistinguishable from the leader rather than moved up.
    assert ranking(page) == [
        ("1", QUICK_DECODE, "leader"),
        ("2", QUICK_DECODE, "one request"),
        ("3", QUICK_DECODE, "overlapping"),
    ]
    assert rank_labels(page) == {
        "leader": "",
        "one request": "no interval",
        "overlapping": "≈ leader",
    }
    assert page.count(">indistinguishable from the leader</span>") == 1
    stored = {
        e.config.label: (e.rank, e.like_leader)
        for e in LeaderboardEntry.objects.select_related("config")
    }
    assert stored == {"leader": (1, None), "one request": (2, None), "overlapping": (3, True)}


def nmax_rows(hardware: Hardware, points, **common) -> list[LeaderboardEntry]:
    return [
        row(hardware, f"dflash n_max {n_max}", tps, spec_label="draft-dflash", n_max=n_max,
            acceptance_rate=acceptance, half=half, n=n, **common)
        for n_max, tps, half, n, acceptance in points
    ]  # fmt: skip


def test_the_nmax_findings_and_the_boards_ties_use_one_test(client, gpu):
    nmax_rows(
        gpu,
        [
            (12, 400.0, 10.0, 5, 0.45),  # the fastest: interval 390-410
            (2, 350.0, 60.0, 5, 0.90),  # wide: Welch cannot tell it from n_max 12 (p 0.08)
            (1, 300.0, 10.0, 5, 0.95),  # clearly slower: 290-310
            (4, 380.0, 0.0, 1, 0.80),  # one request: no interval, neither tie nor loss
        ],
    )

    nmax = text(client.get("/nmax/", {"target": "target", "hardware": gpu.slug}))
    board = text(client.get("/"))

    (finding,) = re.findall(r'<p class="finding"[^>]*>(.*?)</p>', nmax)
    assert "n_max 12 at 45% acceptance reaches 400.0" in finding
    assert "faster than n_max 1 at 95% (300.0 tok/s)" in finding
    assert "n_max 2" not in finding and "n_max 4" not in finding
    assert re.search(r'<td class="num">2 <span class="badge tie"[^>]*>indistinguishable from', nmax)
    assert not re.search(r'<td class="num">4 <span class="badge tie"', nmax)
    # The board, by the same test: n_max 2 is labelled like its leader (its rank stays its
    # place by tok/s), the one-request row has no interval to be compared by.
    assert [(rank, label) for rank, _, label in ranking(board)] == [
        ("1", "dflash n_max 12"),
        ("2", "dflash n_max 4"),
        ("3", "dflash n_max 2"),
        ("4", "dflash n_max 1"),
    ]
    assert rank_labels(board) == {
        "dflash n_max 12": "",
        "dflash n_max 4": "no interval",
        "dflash n_max 2": "≈ leader",
        # Clearly slower than the leader, yet not told apart from the wide row above it.
        "dflash n_max 1": "≈ row above",
    }


def test_the_nmax_page_answers_from_ranked_rows_and_labels_a_series_by_its_definition(client, gpu):
    report = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000"
    )
    seed_page = text(
        client.get("/nmax/", {"target": "qwen3.6-27B", "hardware": report.hardware.slug})
    )
    # The seed kit's self-reported numbers rank nowhere, so no n_max of theirs is crowned.
    assert "No results with an n_max" in seed_page and 'id="nmax-data"' not in seed_page

    nmax_rows(gpu, [(4, 200.0, 5.0, 5, 0.7), (8, 150.0, 5.0, 5, 0.6)], tps_definition="end-to-end")
    page = text(client.get("/nmax/", {"target": "target", "hardware": gpu.slug}))

    data = json_data(page, "nmax-data")
    assert {t["definition"] for t in data["types"]} == {"end-to-end"}
    assert data["definitions"] == ["end-to-end"]
    assert "End-to-end tok/s</th>" in page and "Decode tok/s</th>" not in page
    assert [t["ranking"] for t in data["types"]] == [QUICK_END_TO_END]
    assert data["types"][0]["best_n_max"] == 4


def test_an_nmax_series_keeps_to_one_protocol_and_its_own_paired_baseline(client, gpu):
    quick_baseline = row(gpu, "baseline quick", 50.0, spec_label="none", protocol="quick")
    depth = {"protocol": {"name": "depth", "depths": [4096]}}
    depth_baseline = row(
        gpu, "baseline depth", 20.0, spec_label="none", protocol="depth", canonical=depth
    )
    for n_max, tps in ((2, 120.0), (8, 150.0)):
        row(gpu, f"quick {n_max}", tps, spec_label="draft-dflash", n_max=n_max,
            baseline=quick_baseline.config, baseline_entry=quick_baseline)  # fmt: skip
        row(gpu, f"depth {n_max}", tps / 3, spec_label="draft-dflash", n_max=n_max,
            protocol="depth", canonical=depth, baseline=depth_baseline.config,
            baseline_entry=depth_baseline)  # fmt: skip

    data = json_data(
        text(client.get("/nmax/", {"target": "target", "hardware": gpu.slug})), "nmax-data"
    )

    by_protocol = {series["protocol"]: series for series in data["types"]}
    assert set(by_protocol) == {"quick", "depth 4096 tokens"}
    assert by_protocol["quick"]["tokens_per_second"] == [120.0, 150.0]
    assert by_protocol["quick"]["baseline"]["tokens_per_second"] == 50.0
    assert by_protocol["depth 4096 tokens"]["baseline"]["tokens_per_second"] == 20.0
    assert (
        by_protocol["depth 4096 tokens"]["ranking"]
        == "depth 4096 tokens · decode tok/s · GPU A · b11434"
    )


def test_an_nmax_series_draws_no_baseline_from_another_depth(client, gpu):
    # An n_max sweep at depth 512 measured without a baseline, and a 4-depth run with its own.
    sweep = {"protocol": {"name": "depth", "depths": [512], "output_tokens": 256}}
    depths = {"protocol": {"name": "depth", "depths": [512, 4096, 12288, 36864],
                           "output_tokens": 256}}  # fmt: skip
    for n_max, tps in ((4, 350.0), (12, 400.0)):
        row(gpu, f"sweep {n_max}", tps, spec_label="draft-dflash", n_max=n_max,
            protocol="depth", canonical=sweep)  # fmt: skip
    baseline = row(gpu, "baseline", 180.0, spec_label="none", protocol="depth", canonical=depths)
    row(gpu, "depths 15", 385.0, spec_label="draft-dflash", n_max=15, protocol="depth",
        canonical=depths, baseline=baseline.config, baseline_entry=baseline)  # fmt: skip

    page = text(client.get("/nmax/", {"target": "target", "hardware": gpu.slug}))
    by_protocol = {series["protocol"]: series for series in json_data(page, "nmax-data")["types"]}

    # The only baseline measured is the 4-depth run's, at other contexts: it is that run's
    # baseline, never the sweep's.
    assert by_protocol["depth 512 tokens, 256 out"]["baseline"] is None
    depth_run = by_protocol["depth 512–36864 tokens (4 depths), 256 out"]
    assert depth_run["n_max"] == [15] and depth_run["baseline"]["tokens_per_second"] == 180.0
    assert "No single paired baseline for this series" in page


@pytest.fixture
def h200(user, hardware) -> list[Run]:
    return load_h200_results(owner=user, hardware=hardware)


def test_depth_runs_show_each_depth_against_the_paired_baseline_at_that_depth(client, h200):
    data = json_data(text(client.get("/context/")), "context-data")
    line = next(line for line in data["lines"] if line["label"].startswith("qwen3-8b"))
    # The expected figures straight from the runner's result file, its own baseline included.
    result = json.loads((RESULTS_DIR / "8b-dflash15-depth.json").read_text())
    points = {p["input_tokens"]: p for p in result["points"]}
    baseline = {p["input_tokens"]: p for p in result["baseline"]["points"]}
    assert Run.objects.get(pk=line["run_id"]).config.key == result["config_key"]

    for depth, speedup in zip(line["depths"], line["speedup"], strict=True):
        expected = (
            points[depth]["decode_tokens_per_second"]["mean"]
            / baseline[depth]["decode_tokens_per_second"]["mean"]
        )
        assert speedup == pytest.approx(expected)
    # Across depths: the geometric mean, as the runner combined them in its own summary.
    assert line["speedup_across_depths"] == pytest.approx(combined_speedup(line["speedup"]))
    assert line["speedup_across_depths"] == pytest.approx(result["summary"]["speedup"])
    assert all(n == 2 for n in line["n"]) and all(low is not None for low in line["ci95_low"])


def test_a_depth_without_a_baseline_at_that_depth_has_no_speedup():
    def point(depth: int, mean: float) -> dict:
        return {"input_tokens": depth, "decode_tokens_per_second": {"n": 2, "mean": mean}}

    run = [point(512, 300.0), point(4096, 280.0)]
    # The baseline was measured at 512 and 8192: 4096 must not borrow another depth's figure.
    baseline = [point(512, 150.0), point(8192, 100.0)]

    speedups = selectors.depth_speedups(run, baseline)

    assert speedups == [2.0, None]
    assert combined_speedup(speedups) == 2.0


def test_a_depth_rows_interval_says_it_is_pooled_across_depths(client, h200):
    page = text(client.get("/", {"all": "1"}))
    api = client.get("/api/v1/leaderboard", {"source": "all"}).json()["results"]

    depth_row = next(r for r in api if r["protocol"] == "depth" and len(r["depths"]) == 4)
    assert depth_row["ci95_scope"] == "across depths"
    assert [d["input_tokens"] for d in depth_row["depths"]] == [512, 4096, 12288, 36864]
    assert all(d["ci95_low"] < d["mean"] < d["ci95_high"] for d in depth_row["depths"])
    assert "pooled across 4 depths" in page
    assert re.search(r'title="95% interval pooled across depths: [^"]*512 tokens: [\d.,]+ – ', page)


def test_a_self_reported_release_string_cannot_make_measured_rows_stale(client, gpu):
    # Both releases are ones the site knows (an admin registered a host for each).
    for name, release in (("lab-a", "b11434"), ("lab-b", "b99999")):
        GpuHost.objects.create(name=name, hardware=gpu, key="0" * 64, engine_release=release)
    EngineBuild.objects.create(release="b11434")
    EngineBuild.objects.create(release="b99999")
    row(gpu, "measured", 100.0, engine_release="b11434")
    row(gpu, "claimed", 90.0, engine_release="b99999", self_reported=True)

    assert selectors.newest_release_number() == 11434
    page = text(client.get("/", {"all": "1"}))
    assert ">stale</span>" not in page

    # A measured row on the newer release does make the older one stale.
    row(gpu, "measured later", 80.0, engine_release="b99999")
    services.raise_board_version(row_set=True)
    assert selectors.newest_release_number() == 99999
    assert ">stale</span>" in text(client.get("/", {"all": "1"}))


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


# Concurrency rows -----------------------------------------------------------------------------


def test_a_concurrency_row_ranks_only_among_concurrency_rows(
    concurrency_runs, user, hardware, enqueued, make_result
):
    # A quick row far faster than the concurrency row's pooled decode tok/s.
    measure(user, hardware, make_result, 4, [900.0, 910.0])
    entries = selectors.leaderboard_entries(ranked_only=True)
    page = list(entries)
    ranks = selectors.page_ranks(entries, page, offset=0, ordering="tokens_per_second")
    by_protocol = {}
    for entry in page:
        by_protocol.setdefault(entry.config.protocol, []).append(ranks[entry.pk].rank)
    # Each protocol family's fastest row is rank 1 of its own ranking.
    assert min(by_protocol["concurrency"]) == 1 and min(by_protocol["quick"]) == 1
    speculative = LeaderboardEntry.objects.get(config__key=concurrency_key())
    # The row ranks by aggregate tok/s at its lowest level (its rounds the samples), not by
    # per-request decode pooled over levels, and its speedup is that level's ratio.
    assert speculative.tps_definition == "aggregate" and speculative.interval_basis == "rounds"
    assert speculative.tokens_per_second == pytest.approx(CONCURRENCY_SPECULATIVE[0], rel=1e-3)
    assert speculative.speedup == pytest.approx(CONCURRENCY_SPEEDUPS[0], rel=1e-3)
    assert speculative.speedup_basis == "rounds" and speculative.crossover == "between 2 and 4"
    assert speculative.ranking_key != next(
        e.ranking_key for e in page if e.config.protocol == "quick"
    )
    definitions = selectors.row_definitions(speculative, {})
    assert "at its lowest level" in definitions["tokens_per_second"]
    assert "aggregate tok/s over the paired" in definitions["speedup"]


@pytest.fixture
def record(user, hardware, make_protocol_result, ranked_models):
    """record(levels, speculative tok/s, baseline tok/s, **protocol changes): a concurrency
    config imported with its paired baseline, on ranked models; its key."""
    return functools.partial(import_concurrency_config, user, hardware, make_protocol_result)


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
