"""The board's rows (services.board, refresh_leaderboard_entry): the best-average rule disclosed,
best of k batches beside the pooled view over all of them, lossless only if no batch diverged,
no interval below two requests, output that differs from the baseline's not lossless, the worst
graded fidelity of its batches; a speedup measured on a repeated prompt by drafting that learns
across requests labelled memorised; one config on one GPU and on two in two rows and rankings;
rows of test weights kept off the ranking and moved on and off it with their models' mark
(mark_test_weights), and migration 0007, which filled both for the rows stored before."""

from __future__ import annotations

import html
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard import selectors, services
from leaderboard.models import Job, LeaderboardEntry, RankingSummary, Run
from leaderboard.services.board import mark_test_weights, rerank
from leaderboard.services.results import record_run
from leaderboard.web import board_version
from runner.config import parse_stored_config
from runner.protocols import job_token_budget
from runner.stats import summarize
from tests.support.baselines import (
    DRAFT_SIMPLE,
    diverged,
    finish,
    speculative_and_baseline,
    start,
    submit_baseline,
    with_baseline_section,
)
from tests.support.seed_kit import SEED_CSV


def submit(user, hardware) -> Job:
    return services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)


def row_of(job: Job) -> LeaderboardEntry:
    return LeaderboardEntry.objects.get(config=job.config, hardware=job.hardware)


@pytest.fixture
def speculative(user, models, hardware, enqueued) -> Job:
    return submit(user, hardware)


def test_a_row_shows_its_best_batch_and_the_pooled_mean_of_all_its_batches(
    user, models, hardware, enqueued, make_result
):
    # Five requests a batch, as its protocol plans (the door refuses more than it plans).
    five = DRAFT_SIMPLE | {"protocol": {"name": "quick", "n_predict": 64, "runs": 5}}
    speculative, again = (
        services.submit_config(owner=user, data=five, hardware_slug=hardware.slug) for _ in range(2)
    )
    slow, fast = [90.0, 91.0, 92.0, 93.0, 94.0], [140.0, 141.0, 142.0, 143.0, 144.0]
    finish(speculative, make_result(speculative.config.key, slow))
    finish(again, make_result(again.config.key, fast))

    row = row_of(speculative)
    pooled = summarize(slow + fast)
    assert (row.runs_count, row.tokens_per_second) == (2, pytest.approx(142.0))
    assert row.pooled_mean == pytest.approx(117.0) and row.pooled_n == 10
    assert row.pooled_ci95_low == pytest.approx(pooled["ci95_low"])
    assert row.pooled_ci95_high == pytest.approx(pooled["ci95_high"])
    # Best-of-k inflates the mean: the pooled interval does not even reach the best average.
    assert row.pooled_ci95_high < row.tokens_per_second


def test_the_pool_holds_only_batches_of_the_best_batchs_tok_s_definition(speculative, make_result):
    finish(speculative, make_result(speculative.config.key, [100.0, 110.0, 120.0]))
    with_records = [{"index": i, "end_to_end_tokens_per_second": 30.0} for i in range(2)]
    record_run(
        config=speculative.config,
        hardware=speculative.hardware,
        engine_release="b11434",
        fields={"tps_definition": "end-to-end", "n": 2, "e2e_mean": 30.0},
        requests=with_records,
        provenance={},
        raw_result={},
    )
    row = services.refresh_leaderboard_entry(
        config=speculative.config, hardware=speculative.hardware, engine_release="b11434"
    )

    assert row.runs_count == 2 and row.tps_definition == "decode"
    assert row.pooled_mean == pytest.approx(110.0) and row.pooled_n == 3


def test_a_batch_without_request_records_counts_its_mean_n_times_and_the_pool_has_no_interval(
    speculative, make_result
):
    finish(speculative, make_result(speculative.config.key, [90.0, 100.0, 110.0]))
    record_run(
        config=speculative.config,
        hardware=speculative.hardware,
        engine_release="b11434",
        fields={"tps_definition": "decode", "n": 4, "decode_mean": 200.0},
        requests=[],
        provenance={},
        raw_result={},
    )
    row = services.refresh_leaderboard_entry(
        config=speculative.config, hardware=speculative.hardware, engine_release="b11434"
    )

    assert row.tokens_per_second == pytest.approx(200.0)
    assert row.pooled_n == 7 and row.pooled_mean == pytest.approx((300.0 + 800.0) / 7)
    assert row.pooled_ci95_low is None and row.pooled_ci95_high is None


def test_a_degenerate_batch_is_never_the_best_but_the_pool_holds_it_like_every_batch(
    speculative, user, hardware, make_result
):
    looped = submit(user, hardware)
    finish(speculative, make_result(speculative.config.key, [100.0, 105.0, 110.0]))
    result = make_result(looped.config.key, [900.0, 900.0, 900.0])
    for record in result["requests"]:
        record["distinct_4gram_ratio"] = 0.01
    result["summary"]["degenerate"] = True
    finish(looped, result)

    row = row_of(speculative)
    assert row.runs_count == 2 and row.tokens_per_second == pytest.approx(105.0)
    assert row.degenerate is False
    assert row.pooled_mean == pytest.approx(502.5) and row.pooled_n == 6


def test_one_diverged_batch_makes_the_row_lossy_though_its_best_batch_matched(
    speculative, user, hardware, make_result
):
    again = submit(user, hardware)
    baseline = submit_baseline(speculative)
    finish(baseline, make_result(baseline.config.key, [50.0, 50.0], outputs=["a", "b"]))
    finish(speculative, make_result(speculative.config.key, [90.0, 90.0], outputs=["a", "c"]))
    finish(again, make_result(again.config.key, [150.0, 150.0], outputs=["a", "b"]))

    row = row_of(speculative)
    assert row.best_run == again.run and again.run.lossless is True
    assert row.lossless is False


def test_a_row_is_lossless_only_when_every_compared_batch_matched(
    speculative, user, hardware, make_result
):
    again = submit(user, hardware)
    finish(speculative, make_result(speculative.config.key, [90.0, 90.0], outputs=["a", "b"]))
    # Nothing was compared yet: no baseline measured.
    assert row_of(speculative).lossless is None

    baseline = submit_baseline(speculative)
    finish(baseline, make_result(baseline.config.key, [50.0, 50.0], outputs=["a", "b"]))
    finish(again, make_result(again.config.key, [150.0, 150.0], outputs=["a", "b"]))

    assert row_of(speculative).lossless is True


def test_a_batch_of_one_request_has_no_interval_and_neither_has_a_pool_of_one(
    user, models, hardware, enqueued, make_result
):
    one_run = DRAFT_SIMPLE | {"protocol": DRAFT_SIMPLE["protocol"] | {"runs": 1}}
    speculative = services.submit_config(owner=user, data=one_run, hardware_slug=hardware.slug)
    finish(speculative, make_result(speculative.config.key, [100.0]))

    row = row_of(speculative)
    assert row.n == 1 and row.tokens_per_second == pytest.approx(100.0)
    assert (row.ci95_low, row.ci95_high, row.stdev) == (None, None, None)
    assert row.pooled_n == 1 and (row.pooled_ci95_low, row.pooled_ci95_high) == (None, None)

    again = services.submit_config(owner=user, data=one_run, hardware_slug=hardware.slug)
    finish(again, make_result(again.config.key, [120.0]))
    row = row_of(speculative)
    assert (row.ci95_low, row.ci95_high) == (None, None)
    assert row.pooled_n == 2 and row.pooled_ci95_low < 110.0 < row.pooled_ci95_high


def test_rows_of_test_weights_move_off_and_back_onto_the_ranking_with_the_mark(
    speculative, models, make_result
):
    baseline = submit_baseline(speculative)
    finish(speculative, make_result(speculative.config.key, [100.0, 110.0]))
    finish(baseline, make_result(baseline.config.key, [50.0, 55.0]))
    assert row_of(speculative).test_weights is True and row_of(baseline).test_weights is True

    row_set = board_version.versions([board_version.ROW_SET])[board_version.ROW_SET]
    # The speculative row (tiny target and draft) and the baseline's (tiny target, no draft).
    assert mark_test_weights(models=[models["tiny-qwen3"]], test_weights=False) == 2
    assert row_of(speculative).test_weights is False and row_of(baseline).test_weights is False
    assert board_version.versions([board_version.ROW_SET])[board_version.ROW_SET] > row_set

    assert mark_test_weights(models=[models["tiny-qwen3"]]) == 2
    assert row_of(speculative).test_weights is True


def test_a_row_stays_test_weights_while_its_draft_is_still_marked(
    user, models, hardware, enqueued, settings, tmp_path, make_result
):
    mark_test_weights(models=[models["tiny-qwen3"]], test_weights=False)
    dflash = services.submit_config(
        owner=user,
        data={
            "target_model": "tiny-qwen3.gguf",
            "draft_model": "tiny-dflash.gguf",
            "spec_types": ["draft-dflash"],
            "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
        },
        hardware_slug=hardware.slug,
    )
    finish(dflash, make_result(dflash.config.key, [100.0, 110.0]))
    assert row_of(dflash).test_weights is True

    assert mark_test_weights(models=[models["tiny-qwen3"]], test_weights=False) == 0
    assert row_of(dflash).test_weights is True
    assert mark_test_weights(models=[models["tiny-dflash"]], test_weights=False) == 1
    assert row_of(dflash).test_weights is False


def test_the_migration_marks_the_tiny_fixtures_and_fills_build_flag_keys_of_existing_rows(
    migrate,
):
    old = migrate([("leaderboard", "0006_config_spec_types")])
    tiny = old.get_model("leaderboard", "ModelFile").objects.create(
        name="tiny-qwen3",
        path="tiny-qwen3.gguf",
        sha256="0" * 64,
        size_bytes=1,
        architecture="qwen3",
        metadata={"name": "tiny-qwen3", "vocab_size": 256},
        role="target",
    )
    real = old.get_model("leaderboard", "ModelFile").objects.create(
        name="Qwen3-8B",
        path="Qwen3-8B.gguf",
        sha256="1" * 64,
        size_bytes=1,
        architecture="qwen3",
        metadata={"name": "Qwen3 8B", "vocab_size": 151936},
        role="target",
    )
    config = old.get_model("leaderboard", "Config").objects.create(
        key="0" * 16, canonical={}, label="tiny", target=tiny, target_name="tiny", protocol="quick"
    )
    hardware = old.get_model("leaderboard", "Hardware").objects.create(slug="h", gpu_name="H")
    engine = {"backend": "cuda", "build_flags": ["-DGGML_CUDA=ON"]}
    run = old.get_model("leaderboard", "Run").objects.create(
        config=config,
        hardware=hardware,
        engine_release="b1",
        tps_definition="decode",
        raw_result={"engine": engine},
    )
    old.get_model("leaderboard", "LeaderboardEntry").objects.create(
        config=config, hardware=hardware, engine_release="b1", tokens_per_second=1.0
    )

    new = migrate([("leaderboard", "0007_best_of_batches_and_engine_pairing")])

    models = new.get_model("leaderboard", "ModelFile").objects
    assert models.get(pk=tiny.pk).test_weights and not models.get(pk=real.pk).test_weights
    entry = new.get_model("leaderboard", "LeaderboardEntry").objects.get()
    assert entry.test_weights is True
    # Pooled figures wait for the row's next refresh.
    assert (entry.pooled_mean, entry.pooled_n) == (None, 0)
    stored = new.get_model("leaderboard", "Run").objects.get(pk=run.pk).build_flags_key
    assert stored == services.board.build_flags_key(["-DGGML_CUDA=ON"]) != ""


@pytest.fixture
def jobs(user, models, hardware, enqueued) -> tuple[Job, Job]:
    """A speculative job and its paired baseline, submitted and measured separately."""
    return speculative_and_baseline(user, hardware)


def test_the_entry_shows_the_best_average_over_runs(jobs, user, hardware, make_result):
    speculative, _ = jobs
    again = services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)
    finish(
        speculative,
        make_result(speculative.config.key, [90.0, 100.0, 110.0], draft=(120, 60), tau=2.5),
    )
    finish(again, make_result(again.config.key, [130.0, 140.0, 150.0], draft=(300, 60), tau=1.8))

    entry = LeaderboardEntry.objects.get(config=speculative.config)
    assert entry.runs_count == 2
    assert entry.tokens_per_second == pytest.approx(140.0)
    assert entry.tps_definition == "decode"
    assert entry.n == 3 and entry.ci95_low < 140.0 < entry.ci95_high
    assert entry.acceptance_rate == pytest.approx(0.2) and entry.tau == pytest.approx(1.8)
    assert entry.best_run == again.run


def test_output_that_differs_from_the_baseline_is_not_lossless(jobs, make_result):
    speculative, baseline = jobs
    finish(baseline, make_result(baseline.config.key, [50.0, 50.0], outputs=["a", "b"]))
    finish(speculative, make_result(speculative.config.key, [100.0, 100.0], outputs=["a", "c"]))

    assert LeaderboardEntry.objects.get(config=speculative.config).lossless is False


def test_a_row_shows_its_worst_graded_batch(speculative, user, hardware, make_result):
    baseline_config = speculative.config.baseline
    again = services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)
    for job, kinds, decode in ((speculative, (None, None, None), [150.0, 150.0, 150.0]),
                               (again, (None, "mismatch", None), [170.0, 170.0, 170.0])):  # fmt: skip
        start(job)
        services.record_result(
            job_id=job.pk,
            result=with_baseline_section(
                diverged(make_result(job.config.key, decode), *kinds),
                make_result(baseline_config.key, [50.0, 50.0, 50.0]),
            ),
        )

    assert {run.fidelity for run in Run.objects.filter(config=speculative.config)} == {
        "identical",
        "mismatch",
    }
    assert LeaderboardEntry.objects.get(config=speculative.config).fidelity == "mismatch"


# A speedup measured on a repeated prompt by drafting that learns across requests is labelled:
# the seed's n-gram 11.13x is an upper bound, not what a new prompt gets.


@pytest.fixture
def seed_board(db):
    return services.import_leaderboard_csv(
        content=SEED_CSV.read_bytes(), hardware_name="NVIDIA RTX PRO 6000 Blackwell 96GB"
    )


def test_the_seed_kits_ngram_row_is_labelled_as_measured_on_a_repeated_prompt(seed_board, client):
    ngram = LeaderboardEntry.objects.get(config__label="qwen36-dflash-ngram")
    assert round(ngram.speedup, 2) == 11.13 and ngram.memorised
    # DFlash alone drafts from the target's hidden states, not from earlier output.
    assert not LeaderboardEntry.objects.get(config__label="qwen36-dflash15").memorised
    page = re.sub(r"\s+", " ", html.unescape(client.get("/", {"all": "1"}).content.decode()))
    row = page[page.index("qwen36-dflash-ngram") :]
    row = row[: row.index("</tr>")]
    assert "repeated prompt" in row


def test_a_workers_ngram_result_is_memorised_only_when_its_requests_share_a_prompt(
    user, hardware, models, make_result
):
    mark_test_weights(models=models.values(), test_weights=False)
    job = services.submit_config(
        owner=user,
        data={
            "target_model": "tiny-qwen3.gguf",
            "spec_types": ["ngram-simple"],
            "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
        },
        hardware_slug=hardware.slug,
    )
    result = make_result(job.config.key, [100.0, 101.0, 99.0])
    for record in result["requests"]:
        record["prompt_sha256"] = "a" * 64
    services.record_result(job_id=job.pk, result=result)
    assert LeaderboardEntry.objects.get(config=job.config).memorised

    other = services.submit_config(
        owner=user,
        data={
            "target_model": "tiny-qwen3.gguf",
            "spec_types": ["ngram-simple"],
            "protocol": {"name": "quick", "n_predict": 64, "runs": 3, "seed": 7},
        },
        hardware_slug=hardware.slug,
    )
    distinct = make_result(other.config.key, [100.0, 101.0, 99.0])
    for index, record in enumerate(distinct["requests"]):
        record["prompt_sha256"] = f"{index:064x}"
    services.record_result(job_id=other.pk, result=distinct)
    assert not LeaderboardEntry.objects.get(config=other.config).memorised


def test_one_and_two_gpus_of_the_same_config_are_two_rows_in_two_rankings(both_rows):
    one, two = both_rows
    assert one.config_id == two.config_id and one.pk != two.pk
    assert one.ranking_key != two.ranking_key
    assert "2x RTX 3090 24GB" in two.ranking_label and "2x" not in one.ranking_label
    assert list(selectors.leaderboard_entries(hardware="2x-rtx-3090-24gb")) == [two]
    assert list(selectors.leaderboard_entries(hardware="rtx-3090-24gb")) == [one]


def test_the_migrations_keep_each_rows_target_and_each_jobs_token_budget(migrate, user):
    old = migrate([("leaderboard", "0019_reporter_pseudonyms")])
    target = old.get_model("leaderboard", "ModelFile").objects.create(
        name="tiny-qwen3",
        path="tiny-qwen3.gguf",
        sha256="0" * 64,
        size_bytes=1,
        architecture="qwen3",
        metadata={"name": "tiny-qwen3", "vocab_size": 256},
        role="target",
    )
    stored = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 64}}
    configs = old.get_model("leaderboard", "Config").objects
    config = configs.create(
        key="1" * 16, canonical=stored, label="q", target=target, target_name="tiny-qwen3"
    )
    broken = configs.create(key="2" * 16, canonical={"no": "config"}, label="x", target=target)
    hardware = old.get_model("leaderboard", "Hardware").objects.create(slug="h", gpu_name="H")
    entries = old.get_model("leaderboard", "LeaderboardEntry").objects
    entry = entries.create(
        config=config, hardware=hardware, engine_release="b1", tokens_per_second=1.0
    )
    jobs = old.get_model("leaderboard", "Job").objects
    job = jobs.create(owner_id=user.pk, config=config, hardware=hardware, engine_release="b1")
    unreadable = jobs.create(
        owner_id=user.pk, config=broken, hardware=hardware, engine_release="b1"
    )

    new = migrate([("leaderboard", "0021_entry_target_name")])

    row = new.get_model("leaderboard", "LeaderboardEntry").objects.get(pk=entry.pk)
    assert row.target_name == "tiny-qwen3"
    budgets = dict(new.get_model("leaderboard", "Job").objects.values_list("pk", "total_tokens"))
    expected = job_token_budget(parse_stored_config(stored))["total_tokens"]
    assert budgets == {job.pk: expected, unreadable.pk: 0} and expected > 64


def _summaries() -> set[tuple]:
    fields = ("ranking_key", "target_name", "hardware_id", "rows", "drafts", "sweep")
    return {
        (*values, tuple(n_max_values), tuple(spec_labels))
        for *values, n_max_values, spec_labels in RankingSummary.objects.values_list(
            *fields, "n_max_values", "spec_labels"
        )
    }


def test_each_rankings_summary_follows_its_rows_and_equals_one_decided_from_scratch(
    speculative, models, make_result
):
    baseline = submit_baseline(speculative)
    finish(speculative, make_result(speculative.config.key, [100.0, 110.0]))
    finish(baseline, make_result(baseline.config.key, [50.0, 55.0]))
    key = row_of(speculative).ranking_key
    # Test weights compete nowhere: the rows are counted, no draft and no n_max competes.
    [summary] = RankingSummary.objects.filter(ranking_key=key)
    assert (summary.rows, summary.drafts, summary.n_max_values) == (2, 0, [])
    assert summary.spec_labels == sorted({"none", speculative.config.spec_label})

    mark_test_weights(models=[models["tiny-qwen3"]], test_weights=False)
    [summary] = RankingSummary.objects.filter(ranking_key=key)
    assert (summary.rows, summary.drafts) == (2, 1)
    assert (summary.n_max_values, summary.sweep) == ([speculative.config.n_max], 1)
    kept = _summaries()
    assert services.summarize_every_ranking() == len(kept)
    assert _summaries() == kept
    # Ranked again with nothing changed: no summary is written.
    with CaptureQueriesContext(connection) as again:
        rerank(ranking_key=key)
    assert not any(
        "leaderboard_rankingsummary" in q["sql"] and "INSERT" in q["sql"]
        for q in again.captured_queries
    )

    services.retire_engine_build(release=row_of(speculative).engine_release)
    [summary] = RankingSummary.objects.filter(ranking_key=key)
    assert (summary.rows, summary.drafts, summary.n_max_values) == (2, 0, [])


def test_the_migration_summarizes_the_rankings_already_stored(migrate):
    old = migrate([("leaderboard", "0024_target_tps_index")])
    configs = old.get_model("leaderboard", "Config").objects
    hardware = old.get_model("leaderboard", "Hardware").objects.create(slug="h", gpu_name="H")
    entries = old.get_model("leaderboard", "LeaderboardEntry").objects
    for index, (spec, n_max, rank, speedup) in enumerate(
        [("none", None, None, None), ("draft-simple", 4, 1, 2.0), ("draft-simple", 8, None, 1.5)]
    ):
        config = configs.create(
            key=f"{index:016x}",
            canonical={},
            label=str(index),
            spec_label=spec,
            n_max=n_max,
            target_name="t",
        )
        entries.create(
            config=config,
            hardware=hardware,
            engine_release="b1",
            tokens_per_second=1.0,
            target_name="t",
            ranking_key="k",
            rank=rank,
            speedup=speedup,
        )

    new = migrate([("leaderboard", "0025_ranking_summaries")])

    [summary] = new.get_model("leaderboard", "RankingSummary").objects.all()
    assert (summary.ranking_key, summary.target_name, summary.rows, summary.drafts) == (
        "k",
        "t",
        3,
        1,
    )
    assert (summary.n_max_values, summary.sweep) == ([4], 1)
    assert summary.spec_labels == ["draft-simple", "none"]


def test_the_migration_gives_each_row_its_configs_spec_label_and_n_max(migrate):
    old = migrate([("leaderboard", "0025_ranking_summaries")])
    configs = old.get_model("leaderboard", "Config").objects
    hardware = old.get_model("leaderboard", "Hardware").objects.create(slug="h", gpu_name="H")
    entries = old.get_model("leaderboard", "LeaderboardEntry").objects
    for index, (spec, n_max) in enumerate([("none", None), ("draft-simple", 4), ("dflash", 12)]):
        config = configs.create(
            key=f"{index:016x}", canonical={}, label=str(index), spec_label=spec, n_max=n_max
        )
        entries.create(config=config, hardware=hardware, engine_release="b1", tokens_per_second=1.0)

    new = migrate([("leaderboard", "0026_entry_spec_label_n_max")])

    rows = new.get_model("leaderboard", "LeaderboardEntry").objects.order_by("config__key")
    assert list(rows.values_list("spec_label", "n_max")) == [
        ("none", None),
        ("draft-simple", 4),
        ("dflash", 12),
    ]


def test_a_recorded_run_reranks_without_reading_configs_or_other_targets_summaries(
    user, ranked_models, hardware, make_result
):
    from tests.support.measured_configs import measure

    job = measure(user, hardware, make_result, 4, [100.0, 104.0])
    entry = LeaderboardEntry.objects.get(config=job.config)
    assert (entry.spec_label, entry.n_max) == (job.config.spec_label, job.config.n_max)
    other = RankingSummary.objects.get(ranking_key=entry.ranking_key)
    RankingSummary.objects.create(
        ranking_key=entry.ranking_key,
        target_name="another-target",
        hardware=hardware,
        ranking_label=other.ranking_label,
        rows=1,
        drafts=1,
        n_max_values=[4],
        spec_labels=["draft-simple"],
        sweep=1,
    )
    with CaptureQueriesContext(connection) as reranked:
        rerank(ranking_key=entry.ranking_key, targets=[entry.target_name])
    assert reranked.captured_queries
    assert not any("leaderboard_config" in q["sql"] for q in reranked.captured_queries)
    services.refresh_leaderboard_entry(
        config=job.config, hardware=hardware, engine_release=entry.engine_release
    )
    # Only the recorded run's target is summarized again: another target's summary is kept as
    # it was, even one no row supports (a full rerank drops it).
    assert RankingSummary.objects.filter(target_name="another-target").exists()
    rerank(ranking_key=entry.ranking_key)
    assert not RankingSummary.objects.filter(target_name="another-target").exists()
