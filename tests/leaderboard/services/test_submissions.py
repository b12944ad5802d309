"""Submitting configs: the runner's schema and the registry decide; bad input creates nothing. A
speculative job is sent with its baseline, a synthetic one gets a shared baseline job only where no
pairable baseline is on record (one, however many submit at once), and users who submit one new
config at once share its row; a config that cannot fit in its hardware's memory, or in one GPU of
a split, is refused at its field; a job for a kind of two GPUs goes to that kind's queue."""

from __future__ import annotations

import pytest

from leaderboard import services
from leaderboard.models import Config, Hardware, Job
from runner.config import parse_config, parse_stored_config
from tests.support.baselines import (
    CPU_FLAGS,
    CUDA_FLAGS,
    DRAFT_SIMPLE,
    finish,
    on_engine,
    speculative_and_baseline,
    start,
    with_baseline_section,
)
from tests.support.gpu_kinds import MIB, nvml_gpus
from tests.support.measured_configs import concurrency_at

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


# Synthetic acceptance does not measure its baseline beside itself: it gets a baseline job.
SELF_DRAFT_SYNTHETIC = DRAFT_SIMPLE | {"n_max": 2, "spec_synth_len": 3.0}
DFLASH_SYNTHETIC = DFLASH | {"spec_synth_len": 2.0}


@pytest.fixture
def jobs(user, models, hardware, enqueued) -> tuple[Job, Job]:
    """A speculative job and its paired baseline, submitted and measured separately."""
    return speculative_and_baseline(user, hardware)


@pytest.fixture
def speculative(user, models, hardware, enqueued) -> Job:
    return services.submit_config(owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug)


# A baseline job only where no pairable baseline is on record -------------------------------


def test_a_speculative_job_is_sent_with_its_baseline_and_a_synthetic_one_without(
    user, models, hardware, enqueued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        speculative = services.submit_config(
            owner=user, data=DRAFT_SIMPLE, hardware_slug=hardware.slug
        )
        synthetic = services.submit_config(
            owner=user, data=SELF_DRAFT_SYNTHETIC, hardware_slug=hardware.slug
        )
    sent = {message["kwargs"]["job_id"]: message["kwargs"] for message in enqueued}

    assert sent[speculative.pk]["with_baseline"] is True
    assert sent[synthetic.pk]["with_baseline"] is False
    # Only the synthetic one gets a separate baseline job, and that one runs alone.
    assert not speculative.baseline_jobs.exists()
    assert sent[synthetic.baseline_jobs.get().pk]["with_baseline"] is False
    assert len(sent) == Job.objects.count() == 3


def test_a_baseline_result_means_later_synthetic_submissions_schedule_no_baseline(
    jobs, user, hardware, make_result
):
    _, baseline = jobs
    finish(baseline, make_result(baseline.config.key, [50.0]))

    later = services.submit_config(
        owner=user, data=DRAFT_SIMPLE | {"spec_synth_len": 3.0}, hardware_slug=hardware.slug
    )

    assert later.config.baseline == baseline.config
    assert not Job.objects.filter(auto_scheduled=True).exists()


def test_a_baseline_measured_beside_a_job_means_no_separate_baseline_job_later(
    speculative, user, hardware, make_result
):
    start(speculative)
    services.record_result(
        job_id=speculative.pk,
        result=with_baseline_section(
            make_result(speculative.config.key, [150.0, 150.0]),
            make_result(speculative.config.baseline.key, [50.0, 50.0]),
        ),
    )

    # Even a synthetic config, which does not measure its own, pairs with that baseline run.
    later = services.submit_config(
        owner=user, data=SELF_DRAFT_SYNTHETIC, hardware_slug=hardware.slug
    )

    assert later.config.baseline == speculative.config.baseline
    assert not Job.objects.filter(auto_scheduled=True).exists()


def test_synthetic_jobs_that_share_a_target_context_and_protocol_reuse_one_baseline(
    user, models, hardware, enqueued, make_result
):
    dflash = services.submit_config(owner=user, data=DFLASH_SYNTHETIC, hardware_slug=hardware.slug)
    shorter = services.submit_config(
        owner=user, data=DFLASH_SYNTHETIC | {"n_max": 4}, hardware_slug=hardware.slug
    )
    self_draft = services.submit_config(
        owner=user,
        data=DFLASH_SYNTHETIC | {"draft_model": "tiny-qwen3.gguf", "spec_types": ["draft-simple"]},
        hardware_slug=hardware.slug,
    )
    baseline_jobs = Job.objects.filter(auto_scheduled=True)
    assert dflash.config.baseline == shorter.config.baseline == self_draft.config.baseline
    assert baseline_jobs.count() == 1

    baseline_job = baseline_jobs.get()
    services.record_result(
        job_id=baseline_job.pk, result=make_result(baseline_job.config.key, [100.0])
    )
    later = services.submit_config(
        owner=user, data=DFLASH_SYNTHETIC | {"n_max": 2}, hardware_slug=hardware.slug
    )
    assert later.config.baseline == dflash.config.baseline
    assert Job.objects.filter(auto_scheduled=True).count() == 1

    # A different protocol measures something else: it gets a baseline of its own.
    other = services.submit_config(
        owner=user,
        data=DFLASH_SYNTHETIC | {"protocol": {"name": "quick", "n_predict": 32, "runs": 3}},
        hardware_slug=hardware.slug,
    )
    assert other.config.baseline != dflash.config.baseline
    assert Job.objects.filter(auto_scheduled=True).count() == 2


def test_simultaneous_submissions_that_share_a_baseline_queue_it_once(
    transactional_db, user, models, hardware, enqueued
):
    import threading

    from django.db import connection, connections

    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (CI runs on it)")
    # The first submission creates the shared baseline config; the race is over its job.
    Job.objects.all().delete()
    services.submit_config(
        owner=user, data=DFLASH_SYNTHETIC | {"n_max": 1}, hardware_slug=hardware.slug
    )
    Job.objects.all().delete()
    start = threading.Barrier(6)
    errors = []

    def submit(n_max: int) -> None:
        try:
            start.wait()
            services.submit_config(
                owner=user, data=DFLASH_SYNTHETIC | {"n_max": n_max}, hardware_slug=hardware.slug
            )
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit, args=(n,)) for n in range(2, 8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert Job.objects.filter(auto_scheduled=False).count() == 6
    assert Job.objects.filter(auto_scheduled=True).count() == 1


def test_two_users_storing_one_new_config_at_once_share_its_row(
    transactional_db, django_user_model, models, hardware, enqueued
):
    import threading

    from django.db import connection, connections

    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL (CI runs on it)")
    # Each user's own lock lets them through together: the config's key is what they share.
    owners = [django_user_model.objects.create_user(username=f"u{n}") for n in range(6)]
    start = threading.Barrier(len(owners))
    errors = []

    def submit(owner) -> None:
        try:
            start.wait()
            services.submit_config(owner=owner, data=DFLASH, hardware_slug=hardware.slug)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit, args=(owner,)) for owner in owners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert Job.objects.values("config").distinct().count() == 1
    speculative = Config.objects.get(baseline__isnull=False)
    assert Config.objects.count() == 2  # the config and its paired baseline
    assert list(speculative.spec_types.values_list("name", flat=True)) == ["draft-dflash"]
    assert Job.objects.filter(config=speculative).count() == len(owners)


def test_an_imported_baseline_does_not_stand_in_for_the_workers_own(
    user, models, hardware, enqueued, make_result
):
    baseline_config = parse_config(DRAFT_SIMPLE).baseline()
    imported = on_engine(make_result(baseline_config, [20.0]), backend="cpu", flags=CPU_FLAGS)
    services.import_runner_result(owner=user, hardware=hardware, result=imported, source="file")

    services.submit_config(owner=user, data=SELF_DRAFT_SYNTHETIC, hardware_slug=hardware.slug)

    scheduled = Job.objects.get(auto_scheduled=True)
    assert scheduled.config.key == baseline_config.key


def test_a_baseline_the_workers_measured_on_their_current_engine_is_not_measured_again(
    jobs, user, hardware, make_result
):
    speculative, baseline = jobs
    finish(
        baseline,
        on_engine(make_result(baseline.config.key, [50.0]), backend="cuda", flags=CUDA_FLAGS),
    )
    finish(
        speculative,
        on_engine(make_result(speculative.config.key, [150.0]), backend="cuda", flags=CUDA_FLAGS),
    )

    services.submit_config(owner=user, data=SELF_DRAFT_SYNTHETIC, hardware_slug=hardware.slug)

    assert not Job.objects.filter(auto_scheduled=True).exists()


def test_a_baseline_from_an_engine_the_workers_no_longer_use_is_measured_again(
    jobs, user, hardware, make_result
):
    speculative, baseline = jobs
    finish(
        baseline,
        on_engine(make_result(baseline.config.key, [20.0]), backend="cpu", flags=CPU_FLAGS),
    )
    finish(
        speculative,
        on_engine(make_result(speculative.config.key, [150.0]), backend="cuda", flags=CUDA_FLAGS),
    )

    later = services.submit_config(
        owner=user, data=SELF_DRAFT_SYNTHETIC, hardware_slug=hardware.slug
    )

    again = Job.objects.get(auto_scheduled=True)
    assert again.status == Job.Status.QUEUED and again.config == baseline.config
    assert again.baseline_for == later


# A config that cannot fit in the memory its hardware has (the weights and the K/V cache of
# every slot's context, per GPU for a split) is refused at its field, before any job or engine.


def test_levels_that_do_not_fit_are_a_field_error_and_queue_nothing(
    user, models, hardware, enqueued
):
    # 64 slots of 784 tokens need 50,176 tokens of K/V cache, about 25 MiB for the tiny model.
    hardware.memory_bytes = 16 * MIB
    hardware.save()

    with pytest.raises(services.SubmissionError) as refused:
        services.submit_config(
            owner=user, data=concurrency_at([1, 8, 64]), hardware_slug=hardware.slug
        )

    (message,) = refused.value.errors["protocol.concurrency.levels"]
    assert "64 slot(s) with 50176 tokens" in message
    assert "above the 16.0 MiB this hardware has" in message
    assert not Job.objects.exists() and enqueued == []
    # The same levels fit in more memory, and fewer levels fit in this one.
    services.submit_config(owner=user, data=concurrency_at([1, 8]), hardware_slug=hardware.slug)
    hardware.memory_bytes = 1024 * MIB
    hardware.save()
    services.submit_config(owner=user, data=concurrency_at([1, 8, 64]), hardware_slug=hardware.slug)
    assert Job.objects.count() == 2


def test_a_long_context_that_does_not_fit_is_a_context_error(user, models, hardware):
    hardware.memory_bytes = 2 * MIB
    hardware.save()
    data = {
        "target_model": "tiny-qwen3.gguf",
        "protocol": {"name": "depth", "depths": [3000], "output_tokens": 16, "requests": 1},
    }

    with pytest.raises(services.SubmissionError) as refused:
        services.submit_config(owner=user, data=data, hardware_slug=hardware.slug)

    assert "K/V cache" in refused.value.errors["ctx_size"][0]


@pytest.fixture
def small_gpus(db) -> tuple[Hardware, Hardware]:
    """One GPU of 16 MiB, and two of them."""
    small = {"name": "Tiny GPU", "memory_bytes": 16 * MIB}
    return (
        services.register_hardware_from_gpus(gpus=nvml_gpus(small)),
        services.register_hardware_from_gpus(gpus=nvml_gpus(small, small)),
    )


def refused(user, data: dict, kind: Hardware) -> dict[str, list[str]]:
    with pytest.raises(services.SubmissionError) as refusal:
        services.submit_config(owner=user, data=data, hardware_slug=kind.slug)
    return refusal.value.errors


def test_what_one_gpu_cannot_hold_is_accepted_on_two_by_the_layer_split(
    user, models, small_gpus, enqueued
):
    one, two = small_gpus
    assert (
        "above the 16.0 MiB this hardware has"
        in refused(user, concurrency_at([1, 8, 64]), one)["protocol.concurrency.levels"][0]
    )
    job = services.submit_config(
        owner=user, data=concurrency_at([1, 8, 64]), hardware_slug=two.slug
    )
    assert job.hardware == two


def test_a_split_that_overfills_one_gpu_is_refused_at_its_field(user, models, small_gpus, enqueued):
    _, two = small_gpus
    (none,) = refused(user, concurrency_at([1, 8, 64], split_mode="none"), two)["split_mode"]
    assert "GPU 0 needs at least" in none and "of its 16.0 MiB" in none
    (uneven,) = refused(user, concurrency_at([1, 8, 64], tensor_split="9,1"), two)["tensor_split"]
    assert "tensor split 9,1" in uneven and "GPU 1" not in uneven
    assert not Job.objects.exists() and enqueued == []


def test_a_gpu_the_kind_does_not_have_is_refused_even_without_its_memory(
    user, models, db, enqueued
):
    unknown = services.register_hardware(gpu_name="RTX 3090", gpu_count=2)
    assert unknown.gpu_memory() is None
    assert (
        "this hardware has 2 GPUs"
        in refused(user, {"target_model": "tiny-qwen3.gguf", "tensor_split": [1, 1, 1]}, unknown)[
            "tensor_split"
        ][0]
    )
    single = services.register_hardware(gpu_name="RTX 3090")
    data = {
        "target_model": "tiny-qwen3.gguf",
        "draft_model": "tiny-qwen3.gguf",
        "spec_types": "draft-simple",
        "draft_gpu": 1,
    }
    assert "this hardware has 1 GPU" in refused(user, data, single)["draft_gpu"][0]
    assert enqueued == []


def test_a_job_for_a_two_gpu_kind_goes_to_that_kinds_queue_only(
    user, models, one_3090, two_3090s, enqueued, django_capture_on_commit_callbacks
):
    data = {"target_model": "tiny-qwen3.gguf", "split_mode": "row", "tensor_split": "3,1"}
    with django_capture_on_commit_callbacks(execute=True):
        on_two = services.submit_config(owner=user, data=data, hardware_slug=two_3090s.slug)
        plain = services.submit_config(
            owner=user, data={"target_model": "tiny-qwen3.gguf"}, hardware_slug=one_3090.slug
        )
    assert [message["queue"] for message in enqueued] == [
        "gpu.2x-rtx-3090-24gb",
        "gpu.rtx-3090-24gb",
    ]
    # The message carries the split as the runner composes it into llama-server's flags.
    sent = enqueued[0]["kwargs"]["config"]
    assert (sent["split_mode"], sent["tensor_split"]) == ("row", [3.0, 1.0])
    assert parse_config(sent).key == on_two.config.key != plain.config.key
    assert "split_mode" not in enqueued[1]["kwargs"]["config"]
