"""Submitting configs: the runner's schema and the registry decide; bad input creates nothing."""

from __future__ import annotations

import pytest

from leaderboard import services
from leaderboard.models import Config, Job
from runner.config import parse_config, parse_stored_config

DFLASH = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


def submit(user, hardware, **changes):
    return services.submit_config(owner=user, data=DFLASH | changes, hardware_slug=hardware.slug)


def test_valid_submission_queues_one_job_that_measures_its_baseline_beside_itself(
    user, models, hardware, enqueued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = submit(user, hardware)

    assert job.status == Job.Status.QUEUED and job.owner == user
    assert job.config.spec_label == "draft-dflash" and job.config.n_max == 8
    baseline = job.config.baseline
    assert baseline.spec_label == "none"
    assert baseline.canonical["draft_model"] is None
    assert baseline.ctx_size == job.config.ctx_size
    # Its job runs the paired baseline in the same invocation: no separate baseline job.
    assert list(Job.objects.all()) == [job]
    assert not job.baseline_jobs.exists()
    assert [call["queue"] for call in enqueued] == ["gpu.h200-141gb"]
    payload = enqueued[0]["kwargs"]
    assert payload["job_id"] == job.pk
    assert payload["with_baseline"] is True
    assert payload["models"]["draft"] == {
        "path": "tiny-dflash.gguf",
        "sha256": models["tiny-dflash"].sha256,
    }
    assert enqueued[0]["task_id"] == str(job.task_id)


def test_a_synthetic_submission_queues_its_job_and_an_automatic_baseline(
    user, models, hardware, enqueued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = submit(user, hardware, spec_synth_len=3.0)

    baseline_job = Job.objects.get(auto_scheduled=True)
    assert job.config.synthetic
    assert baseline_job.config == job.config.baseline
    assert baseline_job.baseline_for == job
    assert baseline_job.config.spec_label == "none"
    assert baseline_job.config.canonical["draft_model"] is None
    assert baseline_job.config.ctx_size == job.config.ctx_size
    assert [call["queue"] for call in enqueued] == ["gpu.h200-141gb", "gpu.h200-141gb"]
    sent = {call["kwargs"]["job_id"]: call["kwargs"] for call in enqueued}
    # Synthetic acceptance claims nothing about output: both jobs run alone.
    assert sent[job.pk]["with_baseline"] is False
    assert sent[baseline_job.pk]["with_baseline"] is False


def test_a_second_submission_reuses_the_config(user, models, hardware, enqueued):
    first = submit(user, hardware)
    second = submit(user, hardware)

    assert first.config == second.config
    assert Config.objects.count() == 2
    assert Job.objects.count() == 2 and not Job.objects.filter(auto_scheduled=True).exists()


def test_two_synthetic_submissions_share_one_queued_baseline(user, models, hardware, enqueued):
    first = submit(user, hardware, spec_synth_len=3.0)
    second = submit(user, hardware, spec_synth_len=5.0)

    assert first.config != second.config and first.config.baseline == second.config.baseline
    shared = Job.objects.get(auto_scheduled=True)
    assert shared.config == first.config.baseline and shared.baseline_for == first


def test_a_baseline_submission_schedules_no_extra_job(user, models, hardware, enqueued):
    job = services.submit_config(
        owner=user, data={"target_model": "tiny-qwen3.gguf"}, hardware_slug=hardware.slug
    )
    assert job.config.baseline is None
    assert Job.objects.count() == 1


@pytest.mark.parametrize(
    ("changes", "field", "fragment"),
    [
        ({"target_model": "unknown-model.gguf"}, "target_model", "not a registered model"),
        ({"n_max": 16}, "n_max", "out of range for draft-dflash"),
        ({"draft_model": "tiny-dflash-draft-premerge.gguf"}, "draft_model", "pre-merge DFlash"),
        ({"draft_model": "tiny-dflash-wide.gguf"}, "draft_model", "n_embd 32"),
        ({"draft_model": None}, "draft_model", "needs a draft model"),
        ({"spec_types": ["draft-mtp"], "draft_model": None, "n_max": 3}, "spec_types", "MTP head"),
        ({"target_model": "tiny-dflash.gguf"}, "target_model", "registered as a draft"),
        (
            {"protocol": {"name": "quick", "runs": 0}},
            "protocol.quick.runs",
            "greater than or equal to 1",
        ),
    ],
)
def test_bad_submissions_get_field_errors_and_create_no_job(
    user, models, hardware, enqueued, changes, field, fragment
):
    with pytest.raises(services.SubmissionError) as caught:
        submit(user, hardware, **changes)

    assert fragment in " ".join(caught.value.errors[field])
    assert Job.objects.count() == 0 and Config.objects.count() == 0


def test_missing_fields_are_named(user, models, hardware):
    with pytest.raises(services.SubmissionError) as caught:
        services.submit_config(owner=user, data={}, hardware_slug=hardware.slug)

    assert caught.value.errors == {"target_model": ["Field required"]}
    assert Job.objects.count() == 0


def test_unknown_hardware_and_a_non_object_config_are_refused(user, models, hardware):
    with pytest.raises(services.SubmissionError) as caught:
        services.submit_config(owner=user, data=["not", "a", "dict"], hardware_slug="tpu-v9")

    assert "unknown hardware 'tpu-v9'" in caught.value.errors["hardware"][0]
    assert "JSON object" in caught.value.errors["non_field_errors"][0]


def test_hardware_may_be_omitted_when_only_one_kind_is_served(user, models, hardware, enqueued):
    job = services.submit_config(owner=user, data=DFLASH)
    assert job.hardware == hardware


def test_register_model_refuses_paths_outside_the_models_directory(db, tmp_path):
    outside = tmp_path / "elsewhere.gguf"
    outside.write_bytes(b"GGUF")

    with pytest.raises(services.RegistrationError) as caught:
        services.register_model(path=str(outside))
    assert "outside the models directory" in caught.value.errors["path"][0]
    with pytest.raises(services.RegistrationError):
        services.register_model(path="../elsewhere.gguf")


def test_register_model_reads_metadata_with_the_runner(models):
    draft = models["tiny-dflash"]
    assert draft.role == "draft" and draft.architecture == "dflash"
    assert draft.metadata["dflash_target_layers"] == [1, 3]
    assert draft.metadata["path"] == "tiny-dflash.gguf"
    assert len(draft.sha256) == 64


def test_gpu_names_are_normalised():
    assert services.normalise_gpu_name("NVIDIA GeForce RTX 4090") == "RTX 4090"
    assert services.normalise_gpu_name("NVIDIA(R) H200  ") == "H200"


def test_a_first_suite_categories_job_is_sent_as_the_config_its_row_is(
    user, models, hardware, enqueued, django_capture_on_commit_callbacks
):
    # The first suite's canonical form names no suite (its keys predate suite versions); a GPU
    # host parsing the row's canonical as a new config's JSON would measure the current suite
    # under another key.
    first_suite = {"name": "categories", "suite": "1", "categories": ["code", "math"],
                   "output_tokens": 16, "prompts_per_category": 2}  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        job = submit(user, hardware, protocol=first_suite)

    assert "suite" not in job.config.canonical["protocol"]
    sent = parse_config(enqueued[0]["kwargs"]["config"])
    assert sent.protocol.suite == "1" and sent.key == job.config.key
    assert parse_stored_config(job.config.canonical).key == job.config.key
    # A new config's JSON without a suite is the current suite's: another config.
    assert parse_config(job.config.canonical).key != job.config.key
