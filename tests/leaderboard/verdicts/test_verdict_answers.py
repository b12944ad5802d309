"""One answer to each question, read everywhere, on small crafted boards (issue 44, points 1-2):
a figure and its interval are one pair on the board, /best/, /nmax/, the API and the terminal
client; a row that could not be tested says so; baselines differing only in runs are one
baseline; a speedup resting on one verify step is an anecdote, never crowned; and the best batch
is chosen by the noise rules the row's flag uses."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from leaderboard import services
from leaderboard.models import LeaderboardEntry, Run
from leaderboard.templatetags.specboard import interval
from leaderboard.verdicts.advice import best_n_max, draft_tables, fitting_answers
from leaderboard.verdicts.best_run import best_run, run_sample
from leaderboard.verdicts.evidence import MIN_DRAFTED_TOKENS, MIN_VERIFY_STEPS, evidence_of
from tests.support.baselines import with_baseline_section
from tests.support.measured_configs import draft_simple

BEST = {"target": "tiny-qwen3", "memory_gb": "10"}


def record(user, hardware, make_result, data, decode, baseline, **drafting):
    """Submit a config and store its result with its paired baseline at these speeds."""
    job = services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)
    drafting = drafting or {"draft": (40, 30), "tau": 2.2}
    services.record_result(
        job_id=job.pk,
        result=with_baseline_section(
            make_result(job.config.key, decode, **drafting),
            make_result(job.config.baseline.key, list(baseline)),
        ),
    )
    job.refresh_from_db()
    return job


def row_of(config) -> LeaderboardEntry:
    return LeaderboardEntry.objects.select_related("config").get(config=config)


def best_answer(client) -> str:
    page = client.get("/best/", BEST).content.decode()
    return re.search(r'<p class="answer" id="best-answer">(.*?)</p>', page, re.S).group(1)


# One interval per figure ----------------------------------------------------------------------


@pytest.fixture
def two_baseline_batches(user, ranked_models, hardware, enqueued, make_result):
    """A draft config measured twice, its baseline beside it each time: the baseline's batches
    average 21.0 and 22.3 tok/s (four requests each), the config's 18 and 19 (slower: the
    baseline is the answer on /best/)."""
    data = draft_simple(4, runs=4)
    record(user, hardware, make_result, data, [17.0, 18.0, 18.0, 19.0], [20.0, 21.0, 21.0, 22.0])
    job = record(
        user, hardware, make_result, data, [18.0, 19.0, 19.0, 20.0], [20.3, 22.3, 22.3, 24.3]
    )
    return job.config


def test_a_rows_figure_and_interval_are_one_pair_on_the_board_best_nmax_and_the_api(
    client, two_baseline_batches, hardware
):
    baseline = row_of(two_baseline_batches.baseline)
    best_batch = Run.objects.get(pk=baseline.best_run_id)
    # The figure is the best batch's mean; its interval is that batch's own, over its requests.
    assert baseline.tokens_per_second == pytest.approx(22.3)
    assert (baseline.ci95_low, baseline.ci95_high) == best_batch.ci95
    shown = interval(baseline.ci95_low, baseline.ci95_high)

    board = client.get("/").content.decode()
    assert f"(95% CI {shown}, n 4, best of 2)" in board
    # /best/: the baseline is the answer (the draft row is slower), with the board's pair.
    assert f"22.3 tok/s (95% interval {shown} over its 4 requests)" in best_answer(client)
    nmax = client.get("/nmax/", {"target": "tiny-qwen3", "hardware": hardware.slug})
    assert f"22.3 decode tok/s (95% CI {shown})" in nmax.content.decode()
    [api] = [
        row
        for row in client.get("/api/v1/exports/leaderboard.json", {"source": "all"}).json()
        if row["config_key"] == baseline.config.key
    ]
    assert (api["tokens_per_second"], api["ci95_low"], api["ci95_high"]) == (
        baseline.tokens_per_second,
        baseline.ci95_low,
        baseline.ci95_high,
    )


def test_a_second_batch_does_not_blow_the_configs_interval_up_at_one_degree_of_freedom(
    two_baseline_batches,
):
    baseline = row_of(two_baseline_batches.baseline)
    # The plain t over the two batch means (21.0, 22.3; t = 12.7 at one degree of freedom) read
    # 13.4-29.9; the random-effects estimate keeps both batches' eight requests.
    assert baseline.interval_basis == "batch means"
    assert 19.0 < baseline.config_ci95_low < baseline.config_mean < baseline.config_ci95_high < 24.0


def test_a_row_without_spread_is_not_tested_never_clearly_slower(
    client, user, ranked_models, hardware, enqueued, make_result
):
    # Two configs and their baseline, each of one request: nothing can be tested.
    for n_max, decode in ((4, [80.0]), (3, [60.0])):
        record(user, hardware, make_result, draft_simple(n_max, runs=1), decode, [51.0])
    page = client.get("/best/", BEST).content.decode()
    assert "clearly slower" not in page and "Indistinguishable" not in page
    untested = re.search(
        r'<table class="best-table compact best-untested">(.*?)</table>', page, re.S
    )
    assert untested.group(1).count("not tested (one request)") == 2  # n_max 3 and the baseline


def test_two_baseline_configs_differing_only_in_runs_are_one_baseline_on_best(
    client, user, ranked_models, hardware, enqueued, make_result
):
    record(user, hardware, make_result, draft_simple(4, runs=2), [60.0, 61.0], [50.0, 52.0])
    record(user, hardware, make_result, draft_simple(4, runs=3), [60.0, 61.0, 62.0], [50.0] * 3)
    assert LeaderboardEntry.objects.filter(spec_label="none").count() == 2
    keys = LeaderboardEntry.objects.filter(spec_label="none").values_list("config__key", flat=True)
    page = client.get("/best/", BEST).content.decode()
    assert sorted(key in page for key in keys) == [False, True]


def test_fitting_answers_keep_one_baseline_and_file_rows_without_spread_as_untested():
    def row(pk, tps, *, speculative=True, sd=1.0, n=5):
        return SimpleNamespace(
            pk=pk,
            tokens_per_second=tps,
            config_mean=tps,
            config_stdev=sd,
            config_n=n,
            noisy=False,
            anecdotal=False,
            ranking_key="r",
            ranking_label="r",
            workload_label="quick",
            config=SimpleNamespace(is_speculative=speculative),
        )

    best, one_request = row(1, 100.0), row(2, 80.0, sd=None, n=1)
    baselines = [row(3, 50.0, speculative=False), row(4, 49.0, speculative=False)]
    [answer] = fitting_answers([best, one_request, *baselines])
    assert answer.untested == [one_request] and one_request not in answer.others
    assert answer.others == [baselines[0]] and answer.baseline is baselines[0]


# Evidence before a verdict --------------------------------------------------------------------


@pytest.fixture
def one_lucky_step(user, ranked_models, hardware, enqueued, make_result):
    """A row whose tau comes from 1 verify step of 6 drafted tokens (61 tok/s, 1.20x), and a
    clean slower one (55.5 tok/s) with 25 verify steps."""
    lucky = record(
        user,
        hardware,
        make_result,
        draft_simple(4),
        [60.0, 61.0, 62.0],
        [50.0, 51.0, 52.0],
        draft=(6, 6),
        tau=7.0,
    )
    clean = record(
        user, hardware, make_result, draft_simple(3), [55.0, 55.5, 56.0], [50.0, 51.0, 52.0]
    )
    return lucky.config, clean.config


def test_a_speedup_from_one_verify_step_is_anecdotal_on_every_page_and_never_crowned(
    client, one_lucky_step, hardware
):
    lucky, clean = (row_of(config) for config in one_lucky_step)
    assert lucky.anecdotal and not clean.anecdotal
    assert (lucky.verify_steps, lucky.draft_tokens) == (1, 6)
    note = "anecdotal: from 1 verify step, 6 drafted tokens"
    assert lucky.evidence_note == note
    # The board and the model page say so beside the figures.
    assert note in client.get("/").content.decode()
    model_page = client.get("/models/tiny-qwen3/").content.decode()
    assert note in model_page
    # /best/ and /nmax/ crown the clean row, never the anecdote.
    assert lucky.config.label not in best_answer(client)
    assert clean.config.label in best_answer(client)
    nmax_page = client.get("/nmax/", {"target": "tiny-qwen3", "hardware": hardware.slug})
    assert "best n_max 3" in nmax_page.content.decode()
    # The API and the drafts resource carry the flag and its counts; the threshold is stated.
    [api] = [
        r
        for r in client.get("/api/v1/exports/leaderboard.json").json()
        if r["config_key"] == lucky.config.key
    ]
    assert api["anecdotal"] and api["evidence_note"] == note
    assert f"fewer than {MIN_VERIFY_STEPS} verify steps" in api["evidence_threshold"]
    groups = client.get("/api/v1/drafts", {"target": "tiny-qwen3"}).json()["groups"]
    leaders = [d for g in groups for d in g["drafts"] if d["leader"]]
    assert all(not d["anecdotal"] for d in leaders)


def test_the_evidence_threshold_is_one_rule():
    assert evidence_of(drafted=6, verify_steps=1, tau=7.0).anecdotal
    assert evidence_of(drafted=40, verify_steps=25, tau=2.2).anecdotal is False
    # The seed kit's CSV counts drafted tokens but no verify steps: judged by its tokens.
    assert not evidence_of(drafted=5000, verify_steps=0, tau=None).anecdotal
    assert evidence_of(drafted=MIN_DRAFTED_TOKENS - 1, verify_steps=0, tau=None).anecdotal


def test_no_answer_crowns_an_anecdotal_row():
    def row(pk, speedup, *, anecdotal=False):
        return SimpleNamespace(
            pk=pk,
            config_id=pk,
            speedup=speedup,
            speedup_ci95_low=speedup * 0.9,
            speedup_ci95_high=speedup * 1.1,
            tokens_per_second=speedup * 50,
            rank=pk,
            noisy=False,
            anecdotal=anecdotal,
            ranking_key="r",
            ranking_label="r",
            workload_label="quick",
            tps_definition="decode",
            engine_release="b1",
            hardware=SimpleNamespace(gpu_name="H200"),
            get_tps_definition_display=lambda: "decode",
            config=SimpleNamespace(spec_label=f"type-{pk}", draft_id=None, protocol="quick"),
        )

    lucky, clean = row(1, 1.2, anecdotal=True), row(2, 1.1)
    [table] = draft_tables([lucky, clean])
    leader = next(d for d in table.drafts if d.leader)
    assert leader.entry is clean
    assert best_n_max([lucky, clean]) is clean
    assert best_n_max([lucky]) is None


# The best batch by the row's noise rules ------------------------------------------------------


def test_the_best_batch_is_the_clean_one_by_the_rows_noise_rules(
    user, ranked_models, hardware, enqueued, make_result
):
    data = draft_simple(4, runs=5)
    # 126 tok/s on average with one request at 30 (an outlier, below half the others' median),
    # though its spread (sd 53.7) is under half its mean and its interval stays above 0.
    record(user, hardware, make_result, data, [150.0, 150.0, 150.0, 150.0, 30.0], [50.0] * 5)
    job = record(user, hardware, make_result, data, [94.0, 95.0, 96.0, 95.0, 95.0], [50.0] * 5)
    row = row_of(job.config)
    assert row.tokens_per_second == pytest.approx(95.0)
    assert not row.noisy


def test_best_run_reads_the_noise_rule_it_is_given():
    def batch(pk, mean):
        return SimpleNamespace(
            pk=pk,
            n=5,
            degenerate=False,
            tps_definition="decode",
            decode_mean=mean,
            decode_stdev=mean / 10,
            e2e_mean=None,
            e2e_stdev=None,
        )

    noisy, clean = batch(1, 120.0), batch(2, 95.0)
    chosen = best_run(
        [noisy, clean],
        sample=lambda run: run_sample(run, protocol="quick"),
        protocol="quick",
        noisy=lambda run: run is noisy,
    )
    assert chosen is clean


def test_the_migration_fills_each_rows_evidence_from_its_best_batch(migrate):
    old = migrate([("leaderboard", "0031_hardware_cpu_model")])
    configs = old.get_model("leaderboard", "Config").objects
    hardware = old.get_model("leaderboard", "Hardware").objects.create(slug="h", gpu_name="H")
    runs = old.get_model("leaderboard", "Run").objects
    entries = old.get_model("leaderboard", "LeaderboardEntry").objects
    # A speculative row from 1 verify step of 6 drafted tokens, one from 25 of 40, a baseline.
    for index, (spec, drafted, steps, tau) in enumerate(
        [("draft-simple", 6, 1, 7.0), ("draft-simple", 40, 25, 2.2), ("none", 0, 0, None)]
    ):
        config = configs.create(
            key=f"{index:016x}", canonical={}, label=str(index), spec_label=spec
        )
        run = runs.create(
            config=config,
            hardware=hardware,
            engine_release="b1",
            tps_definition="decode",
            draft_tokens=drafted,
            verify_steps=steps,
            tau=tau,
        )
        entries.create(
            config=config,
            spec_label=spec,
            hardware=hardware,
            engine_release="b1",
            best_run=run,
            tokens_per_second=1.0,
        )

    new = migrate([("leaderboard", "0032_entry_anecdotal_evidence")])

    rows = new.get_model("leaderboard", "LeaderboardEntry").objects.order_by("config__key")
    assert list(rows.values_list("draft_tokens", "verify_steps", "anecdotal")) == [
        (6, 1, True),
        (40, 25, False),
        (0, 0, False),
    ]
