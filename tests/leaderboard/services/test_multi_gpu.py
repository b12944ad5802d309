"""Hardware kinds of several GPUs (issue 28): a kind from the GPUs NVML shows on a host, the
memory check per GPU for a config's split, the queue a job goes to, and the rows: a single-GPU
and a two-GPU row of the same config are different rows, in different rankings."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from leaderboard import dispatch, selectors, services, signing
from leaderboard.celery import gpu_queue
from leaderboard.models import GpuHost, Hardware, Job, LeaderboardEntry
from leaderboard.services.hosts import host_message_refusal
from runner.config import parse_config
from runner.provenance import describe_gpus, visible_gpus
from tests.support.fake_nvml import FakeNvml, install, rtx_3090s

GIB = 2**30
MIB = 2**20
RTX_3090 = {"name": "NVIDIA GeForce RTX 3090", "memory_bytes": 24 * GIB}
RTX_4090 = {"name": "NVIDIA GeForce RTX 4090", "memory_bytes": 24 * GIB}


def nvml_gpus(*gpus: dict) -> list[dict]:
    """GPUs as runner.provenance.visible_gpus gives them on a host."""
    return [{"index": i, "raw_name": gpu["name"]} | gpu for i, gpu in enumerate(gpus)]


@pytest.fixture
def one_3090(db) -> Hardware:
    return services.register_hardware_from_gpus(gpus=nvml_gpus(RTX_3090))


@pytest.fixture
def two_3090s(db) -> Hardware:
    return services.register_hardware_from_gpus(gpus=nvml_gpus(RTX_3090, RTX_3090))


def test_a_kind_says_how_many_gpus_of_which_model(one_3090, two_3090s):
    assert (one_3090.slug, one_3090.label, one_3090.gpu_count) == ("rtx-3090-24gb", "RTX 3090", 1)
    assert (two_3090s.slug, two_3090s.label, two_3090s.gpu_count) == (
        "2x-rtx-3090-24gb",
        "2x RTX 3090 24GB",
        2,
    )
    assert two_3090s.queue_name == gpu_queue("2x-rtx-3090-24gb") != one_3090.queue_name
    assert two_3090s.gpu_memory() == [24 * GIB, 24 * GIB] and one_3090.gpu_memory() == [24 * GIB]
    # The same GPUs again, or the count given by hand, find the same kind.
    again = services.register_hardware_from_gpus(gpus=nvml_gpus(RTX_3090, RTX_3090))
    by_hand = services.register_hardware(
        gpu_name="NVIDIA GeForce RTX 3090", memory_bytes=24 * GIB, gpu_count=2
    )
    assert again == by_hand == two_3090s
    assert Hardware.objects.count() == 2


def test_a_single_gpu_kind_is_what_it_always_was(db):
    kind = services.register_hardware(gpu_name="NVIDIA H200", memory_bytes=141 * GIB)
    assert (kind.slug, kind.gpu_count, kind.gpus, str(kind)) == ("h200-141gb", 1, [], "H200")
    assert kind.gpu_list() == [{"name": "H200", "memory_bytes": 141 * GIB}]


def test_mixed_gpus_are_a_kind_of_their_own(two_3090s):
    mixed = services.register_hardware_from_gpus(gpus=nvml_gpus(RTX_4090, RTX_3090))
    assert mixed.label == "RTX 4090 24GB + RTX 3090 24GB"
    assert mixed.gpu_count == 2 and mixed.slug not in ("2x-rtx-3090-24gb", "rtx-4090-24gb")


@pytest.mark.parametrize(
    "gpus",
    [
        [],
        "two",
        [{"name": ""}],
        [{"name": "RTX 3090", "memory_bytes": -1}],
        [{"name": "RTX 3090", "memory_bytes": True}],
        [{"name": "x\x00"}],
        [RTX_3090] * 17,
    ],
)
def test_gpus_that_are_not_a_list_of_named_gpus_make_no_kind(db, gpus):
    with pytest.raises(services.RegistrationError):
        services.register_hardware_from_gpus(gpus=gpus)
    assert not Hardware.objects.exists()


def test_a_host_serves_a_kind_only_with_exactly_its_gpus(one_3090, two_3090s):
    def problem(kind: Hardware, *gpus: dict) -> str | None:
        return services.gpus_serve_kind_problem(hardware=kind, gpus=nvml_gpus(*gpus))

    assert problem(two_3090s, RTX_3090, RTX_3090) is None
    assert problem(one_3090, RTX_3090) is None
    # NVML's total memory varies a little with the driver: within 5% it is the same GPU.
    close = {"name": "NVIDIA GeForce RTX 3090", "memory_bytes": 23 * GIB}
    assert problem(two_3090s, close, RTX_3090) is None

    one_for_two = problem(two_3090s, RTX_3090)
    assert "2x RTX 3090 24GB" in one_for_two and "(1 GPU;" in one_for_two
    # A larger host would spread a layer split over every GPU it shows: narrow it first.
    assert "CUDA_VISIBLE_DEVICES" in problem(one_3090, RTX_3090, RTX_3090)
    assert problem(two_3090s, RTX_3090, RTX_4090) == (
        "GPU 1 of this host is RTX 4090, not RTX 3090 as in 2x RTX 3090 24GB"
    )
    smaller = {"name": "NVIDIA GeForce RTX 3090", "memory_bytes": 12 * GIB}
    assert "has 12 GiB, not the 24 GiB" in problem(two_3090s, RTX_3090, smaller)
    # A kind of one GPU, often named by hand, asks for one GPU whatever NVML calls it.
    assert problem(one_3090, RTX_4090) is None
    assert services.gpus_serve_kind_problem(hardware=one_3090, gpus={"name": "RTX 3090"})


# The memory check per GPU, at the door. The tiny qwen3's 64 slots of 784 tokens need about
# 25 MiB (tests/leaderboard/services/test_memory_check.py): more than one 16 MiB GPU holds.


def concurrency(**extra) -> dict:
    protocol = {
        "name": "concurrency",
        "levels": [1, 8, 64],
        "input_tokens": 512,
        "output_tokens": 256,
    }
    return {"target_model": "tiny-qwen3.gguf", "protocol": protocol} | extra


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
        in refused(user, concurrency(), one)["protocol.concurrency.levels"][0]
    )
    job = services.submit_config(owner=user, data=concurrency(), hardware_slug=two.slug)
    assert job.hardware == two


def test_a_split_that_overfills_one_gpu_is_refused_at_its_field(user, models, small_gpus, enqueued):
    _, two = small_gpus
    (none,) = refused(user, concurrency(split_mode="none"), two)["split_mode"]
    assert "GPU 0 needs at least" in none and "of its 16.0 MiB" in none
    (uneven,) = refused(user, concurrency(tensor_split="9,1"), two)["tensor_split"]
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


# Rows: one config measured on one RTX 3090 and on two.


@pytest.fixture
def both_rows(make_result, one_3090, two_3090s, user) -> tuple[LeaderboardEntry, LeaderboardEntry]:
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "runs": 3}}
    )
    for kind, decode in ((one_3090, [50.0, 51.0, 52.0]), (two_3090s, [70.0, 71.0, 72.0])):
        services.import_runner_result(
            owner=user, hardware=kind, result=make_result(config, decode), source="test"
        )
    return (
        LeaderboardEntry.objects.get(hardware=one_3090),
        LeaderboardEntry.objects.get(hardware=two_3090s),
    )


def test_one_and_two_gpus_of_the_same_config_are_two_rows_in_two_rankings(both_rows):
    one, two = both_rows
    assert one.config_id == two.config_id and one.pk != two.pk
    assert one.ranking_key != two.ranking_key
    assert "2x RTX 3090 24GB" in two.ranking_label and "2x" not in one.ranking_label
    assert list(selectors.leaderboard_entries(hardware="2x-rtx-3090-24gb")) == [two]
    assert list(selectors.leaderboard_entries(hardware="rtx-3090-24gb")) == [one]


def test_the_hardware_filter_names_a_kind_by_its_gpus(both_rows):
    choices = dict(selectors.leaderboard_filter_choices()["hardware"])
    assert choices == {
        "2x-rtx-3090-24gb": "2x RTX 3090 24GB (2x-rtx-3090-24gb)",
        "rtx-3090-24gb": "RTX 3090 (rtx-3090-24gb)",
    }


def test_best_answers_from_the_kinds_a_person_has(both_rows):
    one, two = both_rows
    peak = one.peak_memory_bytes
    assert peak == two.peak_memory_bytes

    def answered(**asked) -> set[int]:
        answers = selectors.best_config_for(target_name=one.config.target_name, **asked)
        return {answer.best.pk for answer in answers}

    # One GPU that holds the row: the single-GPU row only, never the one measured on two.
    assert answered(memory_bytes=peak, gpu_count=1) == {one.pk}
    # Two GPUs, each holding half of it: the two-GPU row fits them, the one-GPU row does not.
    assert answered(memory_bytes=peak // 2 + 1, gpu_count=2) == {two.pk}
    assert answered(memory_bytes=peak, gpu_count=2) == {one.pk, two.pk}
    # A kind picked: its own rows, at its GPUs' memory.
    assert answered(memory_bytes=24 * GIB, gpu_count=2, hardware=two.hardware) == {two.pk}


def test_describe_gpus_is_the_kinds_name(two_3090s):
    assert describe_gpus(two_3090s.gpu_list()) == two_3090s.label


def test_the_run_page_of_a_two_gpu_run_shows_each_gpus_peak(make_result, two_3090s, user, client):
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "runs": 3}}
    )
    result = make_result(config, [70.0, 71.0, 72.0])
    total = result["summary"]["peak_memory_bytes"]
    result["summary"]["gpus"] = [
        {"index": 0, "peak_memory_bytes": total - 20 * MIB, "energy_joules": None},
        {"index": 1, "peak_memory_bytes": 20 * MIB, "energy_joules": None},
    ]
    (run,) = services.import_runner_result(
        owner=user, hardware=two_3090s, result=result, source="test"
    )
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "2x RTX 3090 24GB" in page
    assert "GPU 1: 20.0 MiB" in page


# A host advertises its GPUs; a job for a two-GPU kind goes only to a host that has them.


def test_a_host_registers_for_a_kind_only_with_the_kinds_gpus(two_3090s):
    with pytest.raises(services.RegistrationError) as refused:
        services.register_gpu_host(
            name="lab-one", hardware_slug=two_3090s.slug, gpus=nvml_gpus(RTX_3090)
        )
    assert "(1 GPU;" in refused.value.errors["gpus"][0]
    host, _ = services.register_gpu_host(
        name="lab-two", hardware_slug=two_3090s.slug, gpus=nvml_gpus(RTX_3090, RTX_3090)
    )
    assert [gpu["name"] for gpu in host.gpus] == ["NVIDIA GeForce RTX 3090"] * 2


def test_the_gpus_in_a_hosts_registration_come_from_runner_gpus_json(two_3090s, monkeypatch):
    install(monkeypatch, FakeNvml(rtx_3090s(2)))
    advertised = json.dumps(visible_gpus())
    call_command(
        "register_gpu_host",
        "lab-a",
        "--hardware",
        two_3090s.slug,
        "--gpus",
        advertised,
        stdout=StringIO(),
    )
    assert len(GpuHost.objects.get(name="lab-a").gpus) == 2
    with pytest.raises(CommandError, match="not JSON"):
        call_command(
            "register_gpu_host",
            "lab-b",
            "--hardware",
            two_3090s.slug,
            "--gpus",
            "two",
            stdout=StringIO(),
        )


@pytest.fixture
def sent_job(user, models, two_3090s, enqueued, django_capture_on_commit_callbacks) -> Job:
    """A job for the two-GPU kind, its message sent to the kind's queue."""
    with django_capture_on_commit_callbacks(execute=True):
        job = services.submit_config(
            owner=user, data={"target_model": "tiny-qwen3.gguf"}, hardware_slug=two_3090s.slug
        )
    job.refresh_from_db()
    assert enqueued[-1]["queue"] == "gpu.2x-rtx-3090-24gb"
    assert enqueued[-1]["kwargs"]["gpus"] == two_3090s.gpu_list()
    return job


def claim(job: Job, host: str, key: str, body: dict) -> str | None:
    """Why the site refuses this host's signed "started" event for the job (None: claimed)."""
    sequence = dispatch.next_sequence()
    signature = signing.sign(
        key=key, kind="progress", job_id=job.pk, delivery=job.delivery, sequence=sequence, body=body
    )
    return host_message_refusal(
        kind="progress", job_id=job.pk, body=body, host=host, signature=signature,
        delivery=job.delivery, sequence=sequence,
    )  # fmt: skip


def test_only_a_host_that_shows_the_kinds_gpus_claims_its_job(sent_job, two_3090s):

    host, key = services.register_gpu_host(name="lab-a", hardware_slug=two_3090s.slug)
    # Registered without GPUs, it must show them when it claims.
    assert "advertised no GPUs" in claim(sent_job, host.name, key, {"phase": "started"})
    one = claim(sent_job, host.name, key, {"phase": "started", "gpus": nvml_gpus(RTX_3090)})
    assert "cannot claim a job of 2x-rtx-3090-24gb" in one and "(1 GPU;" in one
    hostile = claim(sent_job, host.name, key, {"phase": "started", "gpus": [{"name": 5}]})
    assert "cannot claim" in hostile
    assert Job.objects.get(pk=sent_job.pk).host is None

    two = {"phase": "started", "gpus": nvml_gpus(RTX_3090, RTX_3090)}
    assert claim(sent_job, host.name, key, two) is None
    assert Job.objects.get(pk=sent_job.pk).host == host
    # What it showed is what the site now knows of it.
    assert len(GpuHost.objects.get(pk=host.pk).gpus) == 2


def test_a_single_gpu_host_claims_as_it_always_did(
    user, models, one_3090, enqueued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = services.submit_config(
            owner=user, data={"target_model": "tiny-qwen3.gguf"}, hardware_slug=one_3090.slug
        )
    job.refresh_from_db()
    host, key = services.register_gpu_host(name="lab-a", hardware_slug=one_3090.slug)
    # Two GPUs visible for a one-GPU kind: a layer split would use both. Narrow it first.
    assert "CUDA_VISIBLE_DEVICES" in claim(
        job, host.name, key, {"phase": "started", "gpus": nvml_gpus(RTX_3090, RTX_3090)}
    )
    assert claim(job, host.name, key, {"phase": "started"}) is None


# The API: the same schema and service as the form.


def test_the_api_takes_a_split_config_and_names_a_kinds_gpus(user, models, two_3090s, client):
    from leaderboard.accounts.services import issue_api_token

    key = issue_api_token(user=user, name="multi-gpu").key
    data = {
        "target_model": "tiny-qwen3.gguf",
        "split_mode": "row",
        "tensor_split": "3,1",
        "main_gpu": 1,
    }
    response = client.post(
        "/api/v1/submissions",
        {"config": data, "hardware": two_3090s.slug},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert response.status_code == 201, response.content
    job = Job.objects.get()
    assert job.hardware == two_3090s
    assert (job.config.canonical["split_mode"], job.config.canonical["main_gpu"]) == ("row", 1)

    refused = client.post(
        "/api/v1/submissions",
        {"config": data | {"main_gpu": 2}, "hardware": two_3090s.slug},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert refused.status_code == 400
    assert "this hardware has 2 GPUs" in json.dumps(refused.json())

    kinds = {kind["slug"]: kind for kind in client.get("/api/v1/hardware").json()["results"]}
    kind = kinds["2x-rtx-3090-24gb"]
    assert (kind["gpu_count"], kind["label"]) == (2, "2x RTX 3090 24GB")
    assert [gpu["memory_bytes"] for gpu in kind["gpus"]] == [24 * GIB, 24 * GIB]


def test_the_api_schema_describes_the_multi_gpu_options(client):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    config = schema["components"]["schemas"]["BenchmarkConfig"]["properties"]
    assert {"split_mode", "tensor_split", "main_gpu", "draft_gpu"} <= set(config)


# The submit form: the "Several GPUs" fieldset, through the same service.


def test_the_submit_form_sends_a_split_and_shows_a_gpu_the_kind_lacks_inline(
    client, user, models, two_3090s, enqueued
):
    client.force_login(user)
    page = client.get("/submit/").content.decode()
    assert 'id="group-gpus"' in page and "2x RTX 3090 24GB" in page
    form = {
        "hardware": two_3090s.slug, "target_model": "tiny-qwen3.gguf", "protocol": "quick",
        "runs": "2", "n_predict": "32", "split_mode": "none", "main_gpu": "1",
    }  # fmt: skip
    response = client.post("/submit/", form)
    assert response.status_code == 302
    canonical = Job.objects.get().config.canonical
    assert (canonical["split_mode"], canonical["main_gpu"]) == ("none", 1)

    refused = client.post(
        "/submit/", form | {"main_gpu": "", "tensor_split": "1,1,1", "split_mode": "layer"}
    )
    assert refused.status_code == 200
    assert "this hardware has 2 GPUs" in refused.content.decode()
    assert Job.objects.count() == 1


def test_run_this_again_carries_a_configs_split(db):
    from leaderboard.forms import initial_from_config

    config = parse_config(
        {"target_model": "t.gguf", "draft_model": "d.gguf", "spec_types": "draft-simple",
         "split_mode": "row", "tensor_split": [3, 1], "main_gpu": 1, "draft_gpu": 0}
    )  # fmt: skip
    initial, lost = initial_from_config(config)
    assert lost == []
    assert (initial["split_mode"], initial["main_gpu"], initial["draft_gpu"]) == ("row", 1, 0)
