"""A model's page: which draft for its target, as the page shows it and GET /api/v1/drafts gives
it (both from `selectors.draft_advice`): per ranking (GPU kind, workload, tok/s definition and
engine release), each speculative type and draft file by its best speedup over the paired
baseline, "indistinguishable from the fastest" when the difference of the log speedups is within
its noise (`verdicts.ratios_indistinguishable`); flagged rows and other rankings' speedups never
mixed in, and every table headed by its workload."""

from __future__ import annotations

import re

import pytest

from leaderboard import services
from leaderboard.models import LeaderboardEntry
from leaderboard.selectors.answers.drafts import draft_advice
from leaderboard.services.board import mark_test_weights
from tests.support.baselines import with_baseline_section
from tests.support.protocol_results import categories_config, category_records

TARGET = "tiny-qwen3"


@pytest.fixture
def models(models):
    """The tiny models cleared of their test-weights mark: these tests are about the ranking."""
    mark_test_weights(models=models.values(), test_weights=False)
    return models


def measured(user, hardware, make_result, data: dict, decode: list[float], release="b11434"):
    job = services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, decode, draft=(40, 30), tau=2.2, release=release),
            # 50 tok/s on average, one request for each the plan asks.
            make_result(job.config.baseline.key, BASELINE[len(decode)], release=release),
        ),
    )
    return job.config


BASELINE = {1: [50.0], 2: [50.5, 49.5], 3: [50.0, 50.5, 49.5]}


def config(spec_type: str, n_max: int, *, draft: bool = True, protocol=None) -> dict:
    data = {
        "target_model": "tiny-qwen3.gguf",
        "spec_types": [spec_type],
        "n_max": n_max,
        "protocol": protocol or {"name": "quick", "n_predict": 64, "runs": 3},
    }
    # DFlash drafts with its own file; the others here with the target's.
    file = "tiny-dflash.gguf" if spec_type == "draft-dflash" else "tiny-qwen3.gguf"
    return data | ({"draft_model": file} if draft else {})


@pytest.fixture
def board(user, hardware, make_result, models):
    """draft-simple at two n_max (2.0x and 1.6x), DFlash at 1.98x (tied: wide interval) and
    1.2x for another n_max, all on the quick protocol's text prompt (an n-gram config's runner
    sends token-id prompts: another workload, advised apart)."""
    measured(user, hardware, make_result, config("draft-simple", 4), [100.0, 100.5, 99.5])
    measured(user, hardware, make_result, config("draft-simple", 3), [80.0, 80.5, 79.5])
    measured(user, hardware, make_result, config("draft-dflash", 4), [70.0, 128.0, 99.0])
    measured(user, hardware, make_result, config("draft-dflash", 3), [60.0, 60.5, 59.5])
    return hardware


def test_each_draft_by_its_best_speedup_with_ties(board):
    [group] = draft_advice(target_name=TARGET)

    assert group["hardware"] == board and group["definition"] == "decode"
    drafts = group["drafts"]
    assert [(d["spec_label"], d["draft"], d["configs"]) for d in drafts] == [
        ("draft-simple", "tiny-qwen3", 2),
        ("draft-dflash", "tiny-dflash", 2),
    ]
    fastest, dflash = drafts
    assert fastest["entry"].config.n_max == 4 and fastest["leader"] and not fastest["tied"]
    assert fastest["entry"].speedup == pytest.approx(100.0 / 50.0)
    assert dflash["entry"].config.n_max == 4
    # Its wide interval reaches the fastest's: on this evidence, a tie.
    assert dflash["tied"] and dflash["interval"][0] < fastest["interval"][1]


def test_flagged_rows_and_other_gpus_are_kept_apart(board, user, make_result):
    other = services.register_hardware(gpu_name="NVIDIA RTX 4090", memory_bytes=24 * 2**30)
    measured(user, other, make_result, config("draft-simple", 4), [60.0, 60.5, 59.5])
    # A synthetic-acceptance row never advises anyone.
    LeaderboardEntry.objects.filter(config__spec_label="draft-dflash").update(synthetic=True)

    groups = {g["hardware"].gpu_name: g for g in draft_advice(target_name=TARGET)}

    assert set(groups) == {"H200", "RTX 4090"}
    assert [d["spec_label"] for d in groups["H200"]["drafts"]] == ["draft-simple"]
    assert groups["RTX 4090"]["drafts"][0]["entry"].speedup == pytest.approx(1.2)
    assert draft_advice(target_name="no-such-target") == []


def test_the_model_page_shows_the_advice(client, board):
    page = client.get(f"/models/{TARGET}/").content.decode()

    section = page[page.index('id="drafts"') :]
    table = section[section.index("<table") : section.index("</table>")]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table[table.index("<tbody>") :], re.S)
    assert len(rows) == 2
    assert "draft-simple" in rows[0] and "2.00×" in rows[0] and "fastest here" in rows[0]
    assert "draft-dflash" in rows[1] and "indistinguishable from the fastest" in rows[1]
    assert "fastest here" not in rows[1]
    assert "tiny-dflash" in rows[1]


def test_a_target_with_only_flagged_rows_says_there_is_no_advice(client, board):
    LeaderboardEntry.objects.update(synthetic=True)
    response = client.get(f"/models/{TARGET}/")
    assert response.status_code == 200
    assert "No ranked speculative result for this target yet." in response.content.decode()


def test_a_fastest_draft_that_still_loses_to_no_drafting_is_not_crowned_silently(
    client, user, hardware, make_result, models
):
    measured(user, hardware, make_result, config("draft-simple", 4), [25.0, 25.5, 24.5])

    [group] = draft_advice(target_name=TARGET)

    [draft] = group["drafts"]
    assert draft["leader"] and draft["against_baseline"] == "slower" and group["none_pays"]
    page = client.get(f"/models/{TARGET}/").content.decode()
    assert "slower than no drafting" in page
    assert "no draft measured so far is faster than decoding without one" in page


def test_where_the_interval_holds_one_the_page_says_it_is_not_clearly_faster(board, client):
    [group] = draft_advice(target_name=TARGET)
    assert [d["against_baseline"] for d in group["drafts"]] == ["faster", "unclear"]
    assert not group["none_pays"]
    page = client.get(f"/models/{TARGET}/").content.decode()
    assert "not clearly faster than no drafting" in page and "none-pays" not in page


def test_a_draft_measured_on_another_prompt_is_advised_apart(board, user, hardware, make_result):
    # The n-gram config's runner sends token-id prompts of the repetitive text's length: its 6x
    # is no evidence against the drafts measured on the default prompt's text.
    repetitive = {"name": "quick", "n_predict": 64, "runs": 3, "prompt": "a a a a a a a a"}
    measured(
        user,
        hardware,
        make_result,
        config("ngram-simple", 5, draft=False, protocol=repetitive),
        [300.0, 300.5, 299.5],
    )

    groups = draft_advice(target_name=TARGET)

    assert len(groups) == 2
    default, other = sorted(groups, key=lambda g: "token-id prompts" in g["workload"])
    assert default["drafts"][0]["spec_label"] == "draft-simple"
    assert default["drafts"][0]["entry"].speedup == pytest.approx(2.0)
    assert [d["entry"].config.n_max for d in other["drafts"]] == [5]
    assert other["workload"].endswith("distinct token-id prompts of 3 tokens")


def test_without_an_interval_a_tie_is_unknown_and_a_loss_still_said(
    client, user, hardware, make_result, models
):
    # One request each: no interval, so neither a tie nor "clearly slower" can be claimed.
    one = {"name": "quick", "n_predict": 64, "runs": 1}
    measured(user, hardware, make_result, config("draft-simple", 4, protocol=one), [40.0])
    measured(user, hardware, make_result, config("draft-dflash", 4, protocol=one), [30.0])

    [group] = draft_advice(target_name=TARGET)

    first, second = group["drafts"]
    assert first["interval"] is None and second["interval"] is None
    assert second["tie_unknown"] and not second["tied"]
    assert [d["against_baseline"] for d in group["drafts"]] == ["below 1, no interval"] * 2
    assert group["none_pays"]
    page = client.get(f"/models/{TARGET}/").content.decode()
    assert "not tested (no interval)" in page and "below 1 (no interval)" in page
    # The faster of two drafts that both lose to no drafting is not "the fastest".
    assert "least slow here" in page and "fastest here" not in page


def test_one_config_measured_on_two_engine_releases_is_advised_once_per_release(
    user, hardware, make_result, models
):
    # An engine release is part of a ranking: each release's table counts the config once.
    data = config("draft-simple", 4)
    measured(user, hardware, make_result, data, [100.0, 100.5, 99.5])
    measured(user, hardware, make_result, data, [90.0, 90.5, 89.5], release="b11500")
    assert LeaderboardEntry.objects.filter(config__spec_label="draft-simple").count() == 2

    groups = sorted(draft_advice(target_name=TARGET), key=lambda g: g["engine_release"])

    assert [(g["engine_release"], [d["configs"] for d in g["drafts"]]) for g in groups] == [
        ("b11434", [1]),
        ("b11500", [1]),
    ]
    assert [g["drafts"][0]["entry"].speedup for g in groups] == [
        pytest.approx(2.0),
        pytest.approx(1.8),
    ]
    assert all(g["engine_release"] in g["ranking_label"] for g in groups)


def test_how_many_runs_a_protocol_took_does_not_split_a_workload(
    user, hardware, make_result, models
):
    measured(user, hardware, make_result, config("draft-simple", 4), [100.0, 100.5, 99.5])
    five_runs = {"name": "quick", "n_predict": 64, "runs": 5}
    measured(
        user,
        hardware,
        make_result,
        config("draft-dflash", 4, protocol=five_runs),
        [120.0, 120.5, 119.5],
    )

    [group] = draft_advice(target_name=TARGET)

    assert [d["spec_label"] for d in group["drafts"]] == ["draft-dflash", "draft-simple"]


def test_the_api_gives_the_same_advice(client, board):
    data = client.get("/api/v1/drafts", {"target": TARGET}).json()

    [group] = data["groups"]
    assert data["target"] == TARGET and group["hardware"] == board.slug
    assert group["definition"] == "decode" and not group["none_pays"]
    fastest, dflash = group["drafts"]
    assert (fastest["spec_label"], fastest["draft"], fastest["leader"]) == (
        "draft-simple",
        "tiny-qwen3",
        True,
    )
    assert fastest["speedup"] == pytest.approx(2.0)
    assert fastest["speedup_ci95_low"] < 2.0 < fastest["speedup_ci95_high"]
    assert dflash["tied"] and dflash["against_baseline"] == "unclear"
    assert dflash["draft"] == "tiny-dflash"
    assert client.get("/api/v1/drafts", {"target": "nobody"}).json() == {
        "target": "nobody",
        "groups": [],
    }


@pytest.mark.parametrize("query", [{}, {"target": ""}, {"target": "a\x00b"}, {"target": "x" * 201}])
def test_a_bad_drafts_query_is_a_field_error(client, db, query):
    response = client.get("/api/v1/drafts", query)
    assert response.status_code == 400
    assert list(response.json()) == ["target"]


# The demo board's question, on a crafted board ------------------------------------------------
# draft-simple measured on the quick protocol's prompt at 0.64x, ngram-simple on the categories
# protocol's suite at 1.29x: the advice answers on both workloads, each table headed by its own.

CATEGORIES = ["code", "math", "translation"]


@pytest.fixture
def two_workloads(user, hardware, make_result, make_protocol_result, models):
    """draft-simple on quick at 0.64x (its whole interval below 1) and ngram-simple on the
    categories suite at 1.29x on every category."""
    measured(user, hardware, make_result, config("draft-simple", 4), [32.0, 32.2, 31.8])
    ngram = categories_config(CATEGORIES, draft_model=None, spec_types=["ngram-simple"], n_max=4)
    services.import_runner_result(
        owner=user,
        hardware=hardware,
        result=make_protocol_result(
            ngram,
            category_records(
                ngram, dict.fromkeys(CATEGORIES, 129.0), dict.fromkeys(CATEGORIES, 0.8)
            ),
            category_records(ngram.baseline(), dict.fromkeys(CATEGORIES, 100.0), None),
        ),
        source="test",
    )
    return hardware


def drafts_section(page: str) -> list[tuple[str, list[str]]]:
    """The model page's advice: each table's heading and its rows."""
    section = page[page.index('id="drafts"') :]
    found = re.findall(
        r"<h3>(.*?)</h3>\s*<div class=\"table-wrap\"><table[^>]*>(.*?)</table>", section, re.S
    )
    return [
        (
            re.sub(r"<[^>]+>|\s+", " ", heading),
            re.findall(r"<tr[^>]*>(.*?)</tr>", table[table.index("<tbody>") :], re.S),
        )
        for heading, table in found
    ]


def test_the_advice_shows_a_faster_draft_on_another_workload_beside_the_slower_one(
    client, two_workloads
):
    ngram_row = LeaderboardEntry.objects.get(config__spec_label="ngram-simple")
    assert ngram_row.speedup == pytest.approx(1.29) and ngram_row.rank == 1

    groups = {
        g["workload"].split(",")[0].split(" ")[0]: g for g in draft_advice(target_name=TARGET)
    }

    assert set(groups) == {"quick", "categories"}
    [slow] = groups["quick"]["drafts"]
    [fast] = groups["categories"]["drafts"]
    assert (slow["spec_label"], fast["spec_label"]) == ("draft-simple", "ngram-simple")
    assert slow["entry"].speedup == pytest.approx(0.64) and slow["against_baseline"] == "slower"
    assert fast["entry"].speedup == pytest.approx(1.29)
    assert groups["quick"]["none_pays"] and not groups["categories"]["none_pays"]

    tables = drafts_section(client.get(f"/models/{TARGET}/").content.decode())
    assert len(tables) == 2
    by_workload = {heading: rows for heading, rows in tables}
    (quick_heading,) = [h for h in by_workload if groups["quick"]["workload"] in h]
    (categories_heading,) = [h for h in by_workload if groups["categories"]["workload"] in h]
    assert "categories" in categories_heading and "quick" in quick_heading
    [quick_row] = by_workload[quick_heading]
    [categories_row] = by_workload[categories_heading]
    assert "draft-simple" in quick_row and "0.64×" in quick_row
    assert "ngram-simple" in categories_row and "1.29×" in categories_row
    assert "fastest here" in categories_row
    # The faster of the drafts here still loses to decoding without one: not "the fastest".
    assert "fastest" not in quick_row.replace("slower than the fastest", "")
    assert "least slow here" in quick_row and "slower than no drafting" in quick_row


def test_the_api_gives_the_model_pages_tables_one_per_ranking_with_its_workload(
    client, two_workloads
):
    page_tables = drafts_section(client.get(f"/models/{TARGET}/").content.decode())
    advice = draft_advice(target_name=TARGET)

    data = client.get("/api/v1/drafts", {"target": TARGET}).json()

    assert len(data["groups"]) == len(advice) == len(page_tables) == 2
    for group, table, (heading, rows) in zip(data["groups"], advice, page_tables, strict=True):
        assert group["ranking_label"] == table["ranking_label"]
        # The page's heading names the same ranking: GPU, workload, definition and release.
        assert group["gpu_name"] in heading and group["engine_release"] in heading
        assert table["definition_label"] in heading
        assert group["workload"] == table["workload"] and group["workload"] in heading
        assert group["engine_release"] == table["engine_release"] == "b11434"
        assert group["none_pays"] == table["none_pays"]
        assert [
            (d["spec_label"], d["config_key"], d["speedup"], d["leader"]) for d in group["drafts"]
        ] == [
            (d["spec_label"], d["entry"].config.key, d["entry"].speedup, d["leader"])
            for d in table["drafts"]
        ]
        assert all(d["config_key"] in row for d, row in zip(group["drafts"], rows, strict=True))
    workloads = [group["workload"] for group in data["groups"]]
    assert any(w.startswith("categories") for w in workloads)
    assert any(w.startswith("quick") for w in workloads)


def test_a_faster_draft_in_the_targets_ranking_leads_the_advice_at_once(board, user, make_result):
    [before] = draft_advice(target_name=TARGET)
    measured(user, board, make_result, config("draft-simple", 6), [150.0, 150.5, 149.5])
    [after] = draft_advice(target_name=TARGET)
    assert after.drafts[0].entry.config.n_max == 6 != before.drafts[0].entry.config.n_max
