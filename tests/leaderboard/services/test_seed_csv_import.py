"""Import of the seed kit's real leaderboard_runs.csv as self-reported, end-to-end results."""

from __future__ import annotations

import pytest

from leaderboard import selectors, services
from leaderboard.models import Config, LeaderboardEntry, RequestRecord, Run
from tests.support.seed_kit import SEED_CSV


@pytest.fixture
def report(db):
    return services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="NVIDIA RTX PRO 6000 Blackwell 96GB"
    )


def entry(run_name: str) -> LeaderboardEntry:
    return LeaderboardEntry.objects.get(config__label=run_name)


def test_every_row_becomes_a_self_reported_end_to_end_run(report):
    assert report.runs_created == 22 and report.runs_skipped == 0
    assert report.baseline_run_name == "qwen3.6-27B"
    assert Run.objects.count() == 22
    assert set(Run.objects.values_list("tps_definition", "self_reported", "engine_release")) == {
        ("end-to-end", True, "unreported")
    }
    assert Config.objects.count() == 16
    assert RequestRecord.objects.filter(run__run_name="qwen36-dflash15").count() == 10
    assert report.hardware.self_reported and report.hardware.queue_name == ""


def test_each_config_shows_its_best_average_and_speedup_against_the_baseline(report):
    dflash15 = entry("qwen36-dflash15")
    assert dflash15.tokens_per_second == pytest.approx(253.2119518629)
    assert dflash15.speedup == pytest.approx(253.2119518629 / 70.3374475701)
    assert round(dflash15.speedup, 2) == 3.60
    assert dflash15.acceptance_rate == pytest.approx(6350 / 14850)
    assert dflash15.tps_definition == "end-to-end" and dflash15.self_reported
    assert dflash15.config.spec_label == "draft-dflash" and dflash15.config.n_max == 15

    ngram = entry("qwen36-dflash-ngram")
    assert ngram.runs_count == 7
    assert ngram.tokens_per_second == pytest.approx(783.0641487479)

    baseline = entry("qwen3.6-27B")
    assert baseline.speedup is None and baseline.config.spec_label == "none"
    assert entry("qwen3.6-27b-mtp8").config.spec_label == "draft-mtp"
    assert round(entry("qwen36-dflash12").speedup, 2) == 3.64


def test_the_95_percent_interval_comes_from_the_per_run_samples(report):
    dflash15 = entry("qwen36-dflash15")
    assert dflash15.n == 10
    assert dflash15.ci95_low < dflash15.tokens_per_second < dflash15.ci95_high


def test_importing_the_same_file_again_adds_nothing(report):
    again = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="NVIDIA RTX PRO 6000 Blackwell 96GB"
    )
    assert again.runs_created == 0 and again.runs_skipped == 22
    assert Run.objects.count() == 22


def test_the_uploader_can_choose_the_baseline(db):
    report = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="RTX 3090", baseline_run_name="qwen36-dflash2"
    )
    assert report.baseline_run_name == "qwen36-dflash2"
    assert entry("qwen36-dflash4").speedup == pytest.approx(178.3356952769 / 141.0059253621)


def test_imports_appear_on_the_leaderboard_filtered_by_source(report):
    rows = list(selectors.leaderboard_entries(source="self-reported"))
    assert rows[0].config.label == "qwen36-dflash-ngram"
    assert list(selectors.leaderboard_entries(source="measured")) == []
    dflash = list(selectors.leaderboard_entries(spec_type="draft-dflash", ordering="speedup"))
    assert dflash[0].config.label == "qwen36-dflash-ngram"


@pytest.mark.parametrize(
    ("content", "field", "fragment"),
    [
        (b"run_name,avg_tps\nx,1\n", "file", "missing columns"),
        (b"\xff\xfe", "file", "not UTF-8"),
        (
            SEED_CSV.read_bytes().replace(b"70.3374475701", b"seventy"),
            "file",
            "avg_tps must be a number",
        ),
        (
            SEED_CSV.read_bytes().replace(b"qwen3.6-27B", b"qwen3.6-27B-mtp0"),
            "baseline_run_name",
            "candidates: none",
        ),
    ],
)
def test_broken_files_are_refused_with_a_reason_and_create_nothing(db, content, field, fragment):
    with pytest.raises(services.CsvImportError) as caught:
        services.import_leaderboard_csv(content=content, hardware_name="RTX 3090")
    assert fragment in " ".join(caught.value.errors[field])
    assert not Run.objects.exists() and not Config.objects.exists()
