"""What a finished run says, as its job page and run page show it.

- `run_noise`: `leaderboard.verdicts.noise` on the run's stored request records, the interval its
  row shows and its tau. The board's row stores the same verdict (`LeaderboardEntry.noisy`, by
  `services.board`), so the job page, the run page and the row cannot disagree on it.
- `run_flags`: the words the board's badges say of the run (test weights, noisy, anecdotal, ...)
  with the evidence note, for the API and the terminal client.
- `run_speedup`: the run's speedup against its paired baseline, as measured in its own run, else
  its row's (the baseline measured by another job), with the row's 95% interval.
- `baseline_noise`: the same noise verdict on the baseline batch that speedup divides by (the
  row stores it as `LeaderboardEntry.baseline_noisy`): a speedup over a noisy baseline says so.
"""

from __future__ import annotations

from leaderboard.models import LeaderboardEntry, RequestRecord, Run
from leaderboard.stored_results import StoredResult
from leaderboard.verdicts import evidence as evidence_verdicts
from leaderboard.verdicts import noise as noise_verdicts
from leaderboard.verdicts.best_run import run_sample


def run_noise(*, run: Run) -> noise_verdicts.Noise:
    """Whether a run is noisy and why (outliers, an interval reaching 0, its spread), and the
    few-verify-steps note beside its tau."""
    protocol = run.config.protocol
    records = RequestRecord.objects.filter(run=run, phase="measure").values_list(
        *noise_verdicts.RECORD_FIELDS
    )
    points = StoredResult.of(run.raw_result).stored_points
    sample = run_sample(run, points=points, protocol=protocol)
    # The interval its row shows: under concurrency, its lowest level's rounds'.
    interval = noise_verdicts.shown_interval(run, sample=sample, protocol=protocol)
    return noise_verdicts.batch_noise(
        protocol=protocol,
        sample=sample,
        requests=noise_verdicts.requests_of(records, definition=run.tps_definition),
        interval_lows=[interval[0] if interval else None],
        tau=run.tau,
        verify_steps=run.verify_steps if run.draft_tokens else None,
    )


def run_flags(*, run: Run) -> dict:
    """What the board's badges say of a run, as words ("test weights", "noisy", "anecdotal",
    "synthetic", "degenerate", "self-reported"), why it is noisy, and its evidence note."""
    config = run.config
    test_weights = any(
        model is not None and model.test_weights for model in (config.target, config.draft)
    )
    noise = run_noise(run=run)
    evidence = evidence_verdicts.evidence_of(
        drafted=run.draft_tokens, verify_steps=run.verify_steps, tau=run.tau
    )
    anecdotal = config.is_speculative and evidence.anecdotal
    named = {
        "test weights": test_weights,
        "synthetic": run.synthetic,
        "self-reported": run.self_reported,
        "degenerate": run.degenerate,
        "noisy": noise.noisy,
        "anecdotal": anecdotal,
    }
    return {
        "flags": [name for name, present in named.items() if present],
        "noise_reasons": noise.reasons,
        "evidence_note": evidence.note() if anecdotal else "",
    }


def run_speedup(*, run: Run) -> dict | None:
    """The run's speedup: its own (its paired baseline measured in the same run), else its
    row's when this run is the row's best batch, with the row's interval; None without one."""
    row = (
        LeaderboardEntry.objects.filter(
            config_id=run.config_id, hardware_id=run.hardware_id, engine_release=run.engine_release
        )
        .values("best_run_id", "speedup", "speedup_ci95_low", "speedup_ci95_high")
        .first()
    )
    # The row, when its speedup is this run's.
    of_row = (
        row
        if row is not None and row["best_run_id"] == run.pk and row["speedup"] is not None
        else None
    )
    if run.speedup is None and of_row is None:
        return None
    return {
        "value": run.speedup
        if run.speedup is not None
        else (of_row["speedup"] if of_row is not None else None),
        "ci95": (of_row["speedup_ci95_low"], of_row["speedup_ci95_high"]) if of_row else None,
        "measured_in_run": run.speedup is not None,
    }


def speedup_baseline(*, run: Run) -> Run | None:
    """The baseline batch a run's speedup divides by: the one its job measured beside it, else
    its row's (`LeaderboardEntry.baseline_run`) where this run is the row's best batch."""
    config = run.config
    if config.baseline_id is None:
        return None
    if run.job_id is not None:
        beside = (
            Run.objects.filter(
                config_id=config.baseline_id,
                hardware_id=run.hardware_id,
                provenance__measured_with_job=run.job_id,
            )
            .select_related("config")
            .first()
        )
        if beside is not None:
            return beside
    row = (
        LeaderboardEntry.objects.filter(
            config_id=run.config_id,
            hardware_id=run.hardware_id,
            engine_release=run.engine_release,
            best_run_id=run.pk,
        )
        .select_related("baseline_run__config")
        .first()
    )
    return row.baseline_run if row is not None else None


def baseline_noise(*, run: Run) -> tuple[Run, noise_verdicts.Noise] | None:
    """The baseline batch a run's speedup divides by and its noise verdict (`run_noise`), where
    that batch is noisy; None where it is clean or there is none."""
    baseline = speedup_baseline(run=run)
    if baseline is None:
        return None
    found = run_noise(run=baseline)
    return (baseline, found) if found.noisy else None
