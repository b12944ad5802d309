"""Rankings that compare only what is comparable: ranks by the sorted field, never across tok/s
definitions, no tie without an interval, n_max series of one protocol against their own paired
baseline, one speedup definition for depth runs, and staleness from measured releases only."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from leaderboard import selectors, services
from leaderboard.models import Config, EngineBuild, Hardware, LeaderboardEntry, Run
from runner.pairing import combined_speedup
from tests.support.h200_results import RESULTS_DIR, load_h200_results
from tests.support.seed_kit import SEED_CSV


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def ranking(page: str) -> list[tuple[str, str, str]]:
    """(rank, the ranking it is in, config label) for each row of the page's ranking table."""
    table = re.search(r'<table class="board" id="ranking">(.*?)</table>', page).group(1)
    rows = re.findall(
        r"<tr(?: class=\"tied\")?> <td class=\"rank\">(.*?)</td> <td><a [^>]*>([^<]+)</a>", table
    )
    ranked = []
    for cell, label in rows:
        scope = re.search(r'rank-scope"[^>]*>([^<]+)<', cell)
        number = re.match(r"(\d+)", cell)
        ranked.append((number.group(1) if number else "–", scope.group(1) if scope else "", label))
    return ranked


def json_data(page: str, element_id: str):
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page)
    return json.loads(found.group(1))


_keys = itertools.count(1)


@pytest.fixture
def gpu(db) -> Hardware:
    return Hardware.objects.create(slug="gpu-a", gpu_name="GPU A")


def row(hardware: Hardware, label: str, tps: float, **fields) -> LeaderboardEntry:
    """A leaderboard row of its own config; its 95% interval is tps ± `half` over n requests."""
    half, n = fields.pop("half", 2.0), fields.pop("n", 5)
    config_fields = {
        name: fields.pop(name)
        for name in ("spec_label", "protocol", "n_max", "canonical", "baseline", "target_name")
        if name in fields
    }
    config = Config.objects.create(
        **{
            "key": f"{next(_keys):016x}",
            "canonical": {"label": label},
            "label": label,
            "target_name": "target",
            "spec_label": "draft-simple",
            "protocol": "quick",
        }
        | config_fields
    )
    return LeaderboardEntry.objects.create(
        **{
            "config": config,
            "hardware": hardware,
            "engine_release": "b11434",
            "tps_definition": "decode",
            "tokens_per_second": tps,
            "n": n,
            "ci95_low": tps - half if n > 1 else tps,
            "ci95_high": tps + half if n > 1 else tps,
            "runs_count": 1,
        }
        | fields
    )


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
    # tok/s order a > b > c > d, far apart: no tok/s tie could hide a wrong rank.
    row(gpu, "a", 400.0, speedup=2.0, acceptance_rate=0.5, tau=2.0)
    row(gpu, "b", 300.0, speedup=1.5, acceptance_rate=0.9, tau=3.0)
    row(gpu, "c", 200.0, speedup=3.0, acceptance_rate=0.7, tau=None)
    row(gpu, "d", 100.0, speedup=None, acceptance_rate=None, tau=4.0)

    shown = ranking(text(client.get("/", {"ordering": ordering})))

    assert [(rank, label) for rank, _, label in shown] == expected


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
                ("1", "end-to-end", "seed dflash"),
                ("1", "decode", "measured a"),
                ("2", "decode", "measured b"),
                ("2", "end-to-end", "seed mtp"),
            ],
        ),
        (
            "speedup",
            [
                ("1", "end-to-end", "seed dflash"),
                ("2", "end-to-end", "seed mtp"),
                ("1", "decode", "measured a"),
                ("2", "decode", "measured b"),
            ],
        ),
    ],
)
def test_the_all_results_view_numbers_decode_and_end_to_end_rows_separately(
    client, gpu, ordering, expected
):
    row(gpu, "seed dflash", 253.0, tps_definition="end-to-end", self_reported=True, speedup=3.6)
    row(gpu, "measured a", 100.0, speedup=2.0)
    row(gpu, "measured b", 90.0, speedup=1.8)
    row(gpu, "seed mtp", 70.0, tps_definition="end-to-end", self_reported=True, speedup=2.7)

    page = text(client.get("/", {"all": "1", "ordering": ordering}))

    assert ranking(page) == expected
    # Every row says its definition where its tok/s is.
    table = re.search(r'id="ranking">(.*?)</table>', page).group(1)
    definitions = re.findall(r'class="sub tps-definition">([^<]+)<', table)
    assert definitions == [
        "end-to-end (client wall time)" if scope == "end-to-end" else "decode (server timings)"
        for _, scope, _ in expected
    ]


def test_the_seed_kits_end_to_end_imports_never_take_a_measured_rows_rank(client, gpu):
    services.import_leaderboard_csv(content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000")
    row(gpu, "measured", 100.0, speedup=2.0)

    shown = ranking(text(client.get("/", {"all": "1"})))

    decode = [rank for rank, scope, _ in shown if scope == "decode"]
    end_to_end = [rank for rank, scope, _ in shown if scope == "end-to-end"]
    assert decode == ["1"] and end_to_end[0] == "1" and len(end_to_end) >= 10
    assert {scope for _, scope, _ in shown} == {"decode", "end-to-end"}


def test_a_batch_of_one_request_ties_with_nothing(client, gpu):
    row(gpu, "leader", 100.0, half=5.0)
    row(gpu, "overlapping", 97.0, half=4.0)
    # One request at 99 tok/s: inside the leader's interval, but a single request has none.
    row(gpu, "one request", 99.0, n=1)

    page = text(client.get("/"))

    # In tok/s order: the single request is second, the overlapping row shares rank 1.
    assert ranking(page) == [
        ("1", "", "leader"),
        ("2", "", "one request"),
        ("1", "", "overlapping"),
    ]
    assert page.count(">tied with leader</span>") == 1


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
            (2, 350.0, 45.0, 5, 0.90),  # its mean under 390, yet its interval reaches 395
            (1, 300.0, 10.0, 5, 0.95),  # clearly slower: 290-310
            (4, 380.0, 0.0, 1, 0.80),  # one request: no interval, neither tie nor loss
        ],
    )

    nmax = text(client.get("/nmax/", {"target": "target", "hardware": gpu.slug}))
    board = ranking(text(client.get("/")))

    (finding,) = re.findall(r'<p class="finding"[^>]*>(.*?)</p>', nmax)
    assert "faster than n_max 1 at 95% (300.0 tok/s)" in finding
    assert "n_max 2" not in finding and "n_max 4" not in finding
    assert re.search(r'<td class="num">2 <span class="badge tie"[^>]*>tied with best', nmax)
    assert not re.search(r'<td class="num">4 <span class="badge tie"', nmax)
    # The board, by the same test: n_max 2 is tied with its leader, the one-request row is not.
    assert board == [
        ("1", "", "dflash n_max 12"),
        ("2", "", "dflash n_max 4"),
        ("1", "", "dflash n_max 2"),
        ("4", "", "dflash n_max 1"),
    ]


def test_the_nmax_page_labels_the_seed_kits_numbers_end_to_end(client, db):
    report = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000"
    )
    page = text(client.get("/nmax/", {"target": "qwen3.6-27B", "hardware": report.hardware.slug}))

    data = json_data(page, "nmax-data")
    assert data["types"] and {t["definition"] for t in data["types"]} == {"end-to-end"}
    assert "End-to-end tok/s</th>" in page and "Decode tok/s</th>" not in page
    assert data["definitions"] == ["end-to-end"]
    assert {t["protocol"] for t in data["types"]} == {"seed kit CSV (unverified)"}
    # Each series against the import's own baseline row, in the same definition.
    baselines = [t["baseline"]["tokens_per_second"] for t in data["types"]]
    assert baselines == pytest.approx([70.3374475701] * len(baselines))


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


@pytest.fixture
def h200(user, hardware) -> list[Run]:
    return load_h200_results(owner=user, hardware=hardware)


def test_an_nmax_series_draws_no_baseline_from_another_depth(client, h200, hardware):
    page = text(client.get("/nmax/", {"target": "qwen3-8b-random", "hardware": hardware.slug}))
    data = json_data(page, "nmax-data")
    by_protocol = {series["protocol"]: series for series in data["types"]}

    # The n_max sweep ran at depth 512 without a baseline; the only baseline measured is the
    # 4-depth run's, at another context: it is that run's baseline, not the sweep's.
    sweep = by_protocol["depth 512 tokens"]
    assert sweep["baseline"] is None
    depth_run = by_protocol["depth 512–36864 tokens (4 depths)"]
    assert depth_run["n_max"] == [15] and depth_run["baseline"]["tokens_per_second"] > 0
    assert "No single paired baseline for this series" in page


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
