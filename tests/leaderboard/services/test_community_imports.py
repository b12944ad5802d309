"""The seed kit's results CSV imported as self-reported results (services.community_imports): the
real leaderboard_runs.csv end to end, and the import's rules (its own protocol, one uploader's
rows apart from another's, each target paired with its own baseline; numbers out of bounds, NUL
characters and figures that are not their samples' refused by line, with nothing stored)."""

from __future__ import annotations

import csv
import html
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from leaderboard import selectors, services
from leaderboard.models import Config, Hardware, LeaderboardEntry, RequestRecord, Run
from tests.support.api_clients import post_csv, row_counts, token_client
from tests.support.results import result_file
from tests.support.seed_kit import SEED_CSV, seed_csv, seed_csv_with_samples

GPU = "RTX 4090"
SPECULATIVE = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


def faster_kit_file() -> bytes:
    """The kit's file as a stranger might have measured it: every dflash15 batch at 900 tok/s."""
    rows = list(csv.DictReader(io.StringIO(SEED_CSV.read_text())))
    for row in rows:
        if row["run_name"] == "qwen36-dflash15":
            # A whole row: every figure its samples' (the import refuses any other).
            row |= {
                "avg_tps": "900", "median_tps": "900", "min_tps": "899", "max_tps": "901",
                "samples": "[899.0, 901.0]", "runs": "2", "sample_tokens": "[899, 901]",
                "sample_elapsed_s": "[1.0, 1.0]", "total_tokens": "1800", "total_elapsed_s": "2",
            }  # fmt: skip
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=services.SEED_CSV_COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode()


@pytest.fixture
def grace(django_user_model):
    return django_user_model.objects.create_user(username="grace", password="x")


def test_a_seed_csv_import_has_the_seed_csv_protocol_not_quick(db, client):
    services.import_leaderboard_csv(content=SEED_CSV.read_bytes(), hardware_name=GPU)

    assert set(Config.objects.values_list("protocol", flat=True)) == {"seed-csv"}
    assert not selectors.leaderboard_entries(protocol="quick").exists()
    assert selectors.leaderboard_entries(protocol="seed-csv").count() == 16
    key = Config.objects.get(label="qwen36-dflash15").key
    assert "protocol seed kit CSV (unverified)" in client.get(f"/configs/{key}/").content.decode()
    quick_only = client.get("/", {"protocol": "quick"}).content.decode()
    assert "qwen36-dflash15" not in quick_only


def test_two_uploaders_naming_the_same_gpu_keep_separate_rows(db, user, grace):
    first = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name=GPU, uploaded_by=user, publish_name=True
    )
    second = services.import_leaderboard_csv(
        content=faster_kit_file(), hardware_name=GPU, uploaded_by=grace, publish_name=True
    )

    assert first.runs_created == second.runs_created == 22
    rows = LeaderboardEntry.objects.filter(config__label="qwen36-dflash15")
    by_uploader = {row.best_run.provenance["uploaded_by"]: row for row in rows}
    assert set(by_uploader) == {"ada", "grace"}
    # The stranger's faster batches are not ada's best: each row is its uploader's own best.
    assert by_uploader["ada"].tokens_per_second == pytest.approx(253.2119518629)
    assert round(by_uploader["ada"].speedup, 2) == 3.60
    assert by_uploader["grace"].tokens_per_second == pytest.approx(900.0)
    assert by_uploader["grace"].speedup == pytest.approx(900.0 / 70.3374475701)
    baselines = {row.config.baseline.entries.get() for row in rows}
    assert {b.best_run.provenance["uploaded_by"] for b in baselines} == {"ada", "grace"}
    assert LeaderboardEntry.objects.count() == 32


def test_the_same_file_from_the_same_uploader_again_adds_nothing(db, user):
    services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name=GPU, uploaded_by=user
    )
    again = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name=GPU, uploaded_by=user
    )

    assert again.runs_created == 0 and again.runs_skipped == 22
    assert Run.objects.count() == 22 and LeaderboardEntry.objects.count() == 16


def test_anonymous_imports_of_different_files_keep_separate_rows(db):
    services.import_leaderboard_csv(content=SEED_CSV.read_bytes(), hardware_name=GPU)
    services.import_leaderboard_csv(content=faster_kit_file(), hardware_name=GPU)

    speeds = LeaderboardEntry.objects.filter(config__label="qwen36-dflash15").values_list(
        "tokens_per_second", flat=True
    )
    assert sorted(speeds) == [pytest.approx(253.2119518629), pytest.approx(900.0)]
    assert Hardware.objects.count() == 1


def test_two_uploaders_of_the_same_runner_config_keep_separate_rows(db, user, grace, make_result):
    for uploader, speeds in ((user, [100.0, 110.0]), (grace, [300.0, 310.0])):
        services.record_self_reported_result(
            result=result_file(make_result, SPECULATIVE, speeds),
            hardware_name=GPU,
            uploaded_by=uploader,
        )

    speeds = LeaderboardEntry.objects.filter(config__self_reported=True).values_list(
        "tokens_per_second", flat=True
    )
    assert sorted(speeds) == [pytest.approx(105.0), pytest.approx(305.0)]


@pytest.mark.parametrize(
    ("one", "other"),
    [("显卡", "图形卡"), ("RTX 4090!", "RTX 4090?"), ("x" * 120 + "a", "x" * 120 + "b")],
)
def test_hardware_names_that_slugify_alike_stay_separate_kinds(db, one, other):
    first = services.register_hardware(gpu_name=one, self_reported=True)
    second = services.register_hardware(gpu_name=other, self_reported=True)

    assert first != second
    assert (first.gpu_name, second.gpu_name) == (one, other)
    assert all(len(h.slug) <= 100 and h.slug.endswith("-self-reported") for h in (first, second))
    assert services.register_hardware(gpu_name=one, self_reported=True) == first


def test_plain_hardware_names_keep_their_readable_slugs(db):
    assert services.register_hardware(gpu_name=GPU, self_reported=True).slug == (
        "rtx-4090-self-reported"
    )
    measured = services.register_hardware(gpu_name="NVIDIA H200", memory_bytes=141 * 2**30)
    assert measured.slug == "h200-141gb"


TWO_TARGETS = [
    {"run_name": "base", "model": "Qwen/Qwen3-8B", "avg_tps": "100"},
    {"run_name": "dflash8", "model": "Qwen/Qwen3-8B", "avg_tps": "300"},
    {"run_name": "base", "model": "Llama-3.1-8B", "avg_tps": "50"},
    {"run_name": "dflash8", "model": "Llama-3.1-8B", "avg_tps": "200"},
    {"run_name": "mtp4", "model": "Llama-3.1-8B", "avg_tps": "75"},
]


def test_a_file_with_several_targets_pairs_each_with_its_own_baseline(db):
    report = services.import_leaderboard_csv(content=seed_csv(TWO_TARGETS), hardware_name=GPU)

    assert report.baselines == {"Qwen/Qwen3-8B": "base", "Llama-3.1-8B": "base"}
    speedups = {
        (e.config.target_name, e.config.label): e.speedup
        for e in LeaderboardEntry.objects.select_related("config")
    }
    assert speedups == {
        ("Qwen/Qwen3-8B", "base"): None,
        ("Qwen/Qwen3-8B", "dflash8"): pytest.approx(3.0),
        ("Llama-3.1-8B", "base"): None,
        ("Llama-3.1-8B", "dflash8"): pytest.approx(4.0),
        ("Llama-3.1-8B", "mtp4"): pytest.approx(1.5),
    }
    for config in Config.objects.exclude(baseline=None):
        assert config.baseline.target_name == config.target_name


def test_the_kit_file_whose_model_column_repeats_the_run_name_is_one_target(db):
    report = services.import_leaderboard_csv(content=SEED_CSV.read_bytes(), hardware_name=GPU)

    assert report.baselines == {"qwen3.6-27B": "qwen3.6-27B"}
    assert set(Config.objects.values_list("target_name", flat=True)) == {"qwen3.6-27B"}


def test_a_model_column_naming_one_target_names_the_configs_target(db):
    rows = [{**row, "model": "Qwen/Qwen3-8B"} for row in TWO_TARGETS[:2]]
    services.import_leaderboard_csv(content=seed_csv(rows), hardware_name=GPU)

    assert set(Config.objects.values_list("target_name", flat=True)) == {"Qwen/Qwen3-8B"}


@pytest.mark.parametrize(
    ("rows", "options", "field", "message"),
    [
        (
            [TWO_TARGETS[0], {"run_name": "dflash8", "model": "Llama-3.1-8B", "avg_tps": "9"}],
            {},
            "baseline_run_name",
            "name the baseline run of target 'Llama-3.1-8B' (plain decoding); candidates: none",
        ),
        (
            [*TWO_TARGETS, {"run_name": "stray-dflash", "model": "", "avg_tps": "9"}],
            {},
            "file",
            "the file holds several target models (Qwen/Qwen3-8B, Llama-3.1-8B); line 7: the model column names none of them",
        ),
        (
            TWO_TARGETS,
            {"target_name": "Qwen3"},
            "target_name",
            "the file's model column names several targets: Qwen/Qwen3-8B, Llama-3.1-8B",
        ),
        (TWO_TARGETS, {"baseline_run_name": "nope"}, "baseline_run_name", "'nope' is not"),
    ],
)
def test_a_file_with_several_targets_is_refused_when_a_pairing_is_unclear(
    db, rows, options, field, message
):
    with pytest.raises(services.CsvImportError) as refused:
        services.import_leaderboard_csv(content=seed_csv(rows), hardware_name=GPU, **options)

    assert message in " ".join(refused.value.errors[field])
    assert not Run.objects.exists() and not Config.objects.exists()


# Numbers and text the import refuses, by line, at both doors ----------------------------------


@pytest.fixture
def api(user) -> APIClient:
    """The API's door: the test user's token client."""
    return token_client(user)


@pytest.fixture
def staff(django_user_model) -> Client:
    """The admin's door: a superuser's browser."""
    client = Client()
    client.force_login(django_user_model.objects.create_superuser(username="root", password="x"))
    return client


@pytest.fixture
def generous_throttles(settings) -> None:
    settings.SPECBOARD_IMPORT_RATE = "1000/minute"


def post_csv_form(staff: Client, content: bytes, hardware: str = "RTX 4090", **fields):
    body = {"file": SimpleUploadedFile("runs.csv", content), "hardware": hardware}
    body |= {"baseline_run_name": "", "target_name": ""} | fields
    return staff.post("/admin/leaderboard/run/import-csv/", body)


@pytest.mark.parametrize(
    ("column", "value", "fragment"),
    [
        ("avg_tps", "1e999", "avg_tps must be a finite, positive number of at most 1e+06"),
        ("median_tps", "nan", "median_tps must be a finite"),
        ("max_tps", "2e6", "max_tps must be a finite"),
        ("total_elapsed_s", "-inf", "total_elapsed_s must be a finite"),
        ("runs", "1e300", "runs must be a finite, positive number of at most 100000"),
        ("runs", "2.5", "runs must be a whole number"),
        ("total_tokens", "99999999999", "total_tokens must be a finite"),
        ("draft_tokens", "1e999", "draft_tokens must be a finite"),
        ("samples", "[1e999, 100]", "samples must be a finite"),
        ("samples", "[NaN, 100]", "samples is not a JSON list of numbers"),
        ("samples", "[Infinity]", "samples is not a JSON list of numbers"),
        ("samples", "[true, 100]", "samples must be a number"),
        ("samples", '["100"]', "samples must be a number"),
        ("samples", "[" * 5000, "samples is not a JSON list of numbers"),
        ("samples", json.dumps([1.0] * 100_001), "samples holds more than 100000 values"),
        ("sample_tokens", "[1e10]", "sample_tokens must be a finite"),
        ("sample_tokens", f"[{'9' * 5000}]", "sample_tokens is not a JSON list of numbers"),
        ("sample_elapsed_s", "[-1]", "sample_elapsed_s must be a finite"),
    ],
)
def test_overflowing_and_out_of_bound_numbers_are_refused_by_line_at_both_doors(
    api, staff, generous_throttles, column, value, fragment
):
    rows = [{"run_name": "base", "avg_tps": "70"}, {"run_name": "base-dflash", "avg_tps": "140"}]
    rows[1][column] = value
    content = seed_csv_with_samples(rows)
    before = row_counts()

    response = post_csv(api, content)
    form = post_csv_form(staff, content)

    assert response.status_code == 400
    assert f"line 3: {fragment}" in " ".join(response.json()["file"])
    assert form.status_code == 200 and f"line 3: {fragment}" in html.unescape(form.content.decode())
    assert row_counts() == before


@pytest.mark.parametrize("column", ["run_name", "model", "prompt_preview", "api"])
def test_nul_characters_in_the_files_text_are_refused_at_both_doors(
    api, staff, generous_throttles, column
):
    rows = [{"run_name": "base", "avg_tps": "70"}, {"run_name": "base-dflash", "avg_tps": "140"}]
    rows[1][column] = f"{rows[1].get(column, 'x')}\x00tail"
    content = seed_csv_with_samples(rows)
    before = row_counts()

    response = post_csv(api, content)
    form = post_csv_form(staff, content)

    assert response.status_code == 400
    assert f"line 3: {column} contains a NUL character" in response.json()["file"]
    assert f"line 3: {column} contains a NUL character" in form.content.decode()
    assert row_counts() == before


@pytest.mark.parametrize("field", ["hardware", "target_name", "baseline_run_name"])
def test_nul_characters_in_the_import_fields_are_refused_at_both_doors(
    api, staff, generous_throttles, field
):
    fields = {"hardware": "RTX 4090", field: "base\x00"}
    content = seed_csv_with_samples([{"run_name": "base", "avg_tps": "70"}])
    before = row_counts()

    response = post_csv(api, content, **fields)
    form = post_csv_form(staff, content, **fields)

    assert response.status_code == 400 and "Null characters" in " ".join(response.json()[field])
    assert "Null characters are not allowed" in form.content.decode()
    assert row_counts() == before
    with pytest.raises(services.CsvImportError) as refused:
        services.import_leaderboard_csv(
            content=content, **{"hardware_name": "RTX 4090"} | _service_names(field)
        )
    assert refused.value.errors == {field: ["must not contain a NUL character"]}
    assert row_counts() == before


def _service_names(field: str) -> dict[str, str]:
    name = {"hardware": "hardware_name"}.get(field, field)
    return {name: "base\x00"}


# The seed CSV: a row's summary must be its samples'.
def _kit_rows() -> list[dict]:
    return list(csv.DictReader(io.StringIO(SEED_CSV.read_text())))


@pytest.mark.parametrize(
    ("column", "value", "named"),
    [
        ("avg_tps", "900", "avg_tps is 900, but its samples' mean is 253.2119519"),
        ("median_tps", "1", "median_tps is 1, but its samples' median is"),
        ("runs", "3", "runs is 3, but samples holds 10"),
        ("total_tokens", "1", "total_tokens is 1, but its samples sum to 7330"),
        ("sample_elapsed_s", json.dumps([1.0] * 10), "samples[0] is 230.639 tok/s, but its 733"),
    ],
)
def test_a_seed_csv_row_whose_figures_are_not_its_samples_is_refused_by_line(
    db, column, value, named
):
    rows = _kit_rows()
    rows[1][column] = value  # qwen36-dflash15, the file's line 3
    with pytest.raises(services.CsvImportError) as caught:
        services.import_leaderboard_csv(
            content=seed_csv(rows, defaults={}), hardware_name="RTX PRO 6000"
        )
    (message,) = caught.value.errors["file"]
    assert message.startswith("line 3: ") and named in message
    assert not Run.objects.exists() and not RequestRecord.objects.exists()


def test_the_seed_kits_own_file_imports_whole(db):
    report = services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000"
    )
    assert report.runs_created == 22


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
