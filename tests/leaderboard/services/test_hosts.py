"""GPU hosts we do not own: each signs what it sends with its own key, for one delivery of one
job and once; the database side records a result only from the host that claimed the job, and
a result's engine release only when the job or the host's registration names it. A host
registers for, and claims a job of, a kind only with the kind's GPUs."""

from __future__ import annotations

import json
import logging
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from leaderboard import selectors, services, tasks
from leaderboard.messaging import dispatch, signing
from leaderboard.models import EngineBuild, GpuHost, Job, LeaderboardEntry, Run
from leaderboard.services.hosts import HostMessage, host_message_refusal
from runner.provenance import visible_gpus
from tests.support.fake_nvml import FakeNvml, install, rtx_3090s
from tests.support.gpu_kinds import RTX_3090, nvml_gpus

CONFIG = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 8}}


@pytest.fixture
def job(user, models, hardware, enqueued) -> Job:
    return services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)


@pytest.fixture
def hosts(hardware) -> dict[str, tuple[str, str]]:
    """Two registered hosts of the same hardware kind: the honest one and a rogue one."""
    honest, honest_key = services.register_gpu_host(name="lab-a", hardware_slug=hardware.slug)
    rogue, rogue_key = services.register_gpu_host(name="lab-b", hardware_slug=hardware.slug)
    return {"honest": (honest.name, honest_key), "rogue": (rogue.name, rogue_key)}


def sent_delivery(job: Job) -> str:
    """The nonce in the job message the site sent to the job's queue (what a host receives)."""
    return Job.objects.get(pk=job.pk).delivery


def message(
    kind: str,
    job_id: int,
    body: dict,
    host: tuple[str, str],
    *,
    delivery: str,
    sequence: int | None = None,
) -> dict:
    """The signed envelope a GPU worker puts around a body (leaderboard.messaging.dispatch)."""
    name, key = host
    sequence = dispatch.next_sequence() if sequence is None else sequence
    signature = signing.sign(
        key=key, kind=kind, job_id=job_id, delivery=delivery, sequence=sequence, body=body
    )
    return {"delivery": delivery, "sequence": sequence, "host": name, "signature": signature}


def start(job: Job, host: tuple[str, str], *, delivery: str | None = None, **envelope) -> dict:
    """Send the "started" event; returns the task's keyword arguments (to send them again)."""
    started = {"phase": "started"}
    delivery = sent_delivery(job) if delivery is None else delivery
    kwargs = {"job_id": job.pk, "progress": started} | message(
        "progress", job.pk, started, host, delivery=delivery, **envelope
    )
    tasks.record_progress_task.apply(kwargs=kwargs).get()
    return kwargs


def post_result(job: Job, result: dict, sender: tuple[str, str], **override) -> dict:
    signed = message("result", job.pk, result, sender, delivery=sent_delivery(job)) | override
    kwargs = {"job_id": job.pk, "result": result} | signed
    tasks.record_result_task.apply(kwargs=kwargs).get()
    return kwargs


def refusals(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]


def test_registering_a_host_issues_a_key_once_and_refuses_bad_names(hardware):
    host, key = services.register_gpu_host(name="Lab 4090 #1", hardware_slug=hardware.slug)
    assert host.name == "lab-4090-1" and len(key) == 64 and host.key == key
    assert host.engine_release == ""
    for name, hardware_slug, field in (
        ("Lab 4090 #1", hardware.slug, "name"),
        ("!!!", hardware.slug, "name"),
        ("lab-c", "no-such-kind", "hardware"),
    ):
        with pytest.raises(services.RegistrationError) as refused:
            services.register_gpu_host(name=name, hardware_slug=hardware_slug)
        assert field in refused.value.errors


def test_the_register_command_records_the_release_an_admin_gives_the_host(hardware, capsys):
    call_command("register_gpu_host", "lab-x", hardware=hardware.slug, engine_release="b11500")
    printed = capsys.readouterr().out
    host = GpuHost.objects.get(name="lab-x")
    assert host.engine_release == "b11500"
    assert f"SPECBOARD_HOST_KEY={host.key}" in printed


def test_every_job_message_sent_carries_a_fresh_delivery_that_the_job_keeps(
    user, models, hardware, enqueued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)
    (first,) = enqueued
    assert first["kwargs"]["delivery"] == sent_delivery(job) and len(sent_delivery(job)) == 32
    Job.objects.filter(pk=job.pk).update(created_at=job.created_at.replace(year=2000))

    # The reconciler sends the job again (the broker lost it): a new delivery replaces the old.
    services.requeue_lost_jobs(held_task_ids=set(), older_than_s=1)

    again = enqueued[-1]["kwargs"]["delivery"]
    assert again == sent_delivery(job) and again != first["kwargs"]["delivery"]


def test_a_queued_job_a_host_already_reported_on_is_not_sent_again(job, enqueued):
    # Its worker took the message and finished before the db worker recorded its "started":
    # sending it again would make that run count for nothing.
    Job.objects.filter(pk=job.pk).update(created_at=job.created_at.replace(year=2000))
    delivery = sent_delivery(job)
    assert (
        services.requeue_lost_jobs(held_task_ids=set(), older_than_s=1, reporting_job_ids={job.pk})
        == []
    )
    assert sent_delivery(job) == delivery and enqueued == []


def test_the_host_that_claimed_a_job_records_its_result(job, hosts, make_result):
    start(job, hosts["honest"])
    post_result(job, make_result(job.config.key, [42.0]), hosts["honest"])

    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.host.name == "lab-a"
    assert job.run.decode_mean == 42.0


def test_a_rogue_host_cannot_post_a_result_for_another_hosts_job(job, hosts, make_result, caplog):
    start(job, hosts["honest"])
    forged = make_result(job.config.key, [99_999.0])

    with caplog.at_level(logging.WARNING, logger="leaderboard.services.hosts"):
        # Signed with its own key under its own name, or under the honest host's name.
        post_result(job, forged, hosts["rogue"])
        post_result(job, forged, hosts["rogue"], host="lab-a")
        # Unsigned, and a claim on a job another host holds.
        post_result(job, forged, hosts["rogue"], host="", signature="")
        start(job, hosts["rogue"])
        post_result(job, forged, hosts["rogue"])

    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and job.host.name == "lab-a"
    assert not Run.objects.exists()
    refused = refusals(caplog)
    assert len(refused) == 5, refused
    assert "did not claim the job" in refused[0] and "not host 'lab-a'" in refused[1]
    assert "not signed" in refused[2] and "another host holds the job" in refused[3]

    post_result(job, make_result(job.config.key, [40.0]), hosts["honest"])
    assert Run.objects.get().decode_mean == 40.0


def test_a_revoked_host_or_a_host_of_another_kind_is_refused(job, hosts, make_result):
    services.revoke_gpu_host(name="lab-a")
    start(job, hosts["honest"])
    assert Job.objects.get(pk=job.pk).host is None

    other_kind = services.register_hardware(gpu_name="RTX 4090", memory_bytes=24 * 2**30)
    elsewhere = services.register_gpu_host(name="lab-c", hardware_slug=other_kind.slug)
    start(job, (elsewhere[0].name, elsewhere[1]))
    assert Job.objects.get(pk=job.pk).host is None


def test_a_replayed_started_event_is_a_no_op_and_never_fails_the_running_job(job, hosts, caplog):
    started = start(job, hosts["honest"])
    with caplog.at_level(logging.WARNING, logger="leaderboard.services.hosts"):
        for _ in range(3):
            tasks.record_progress_task.apply(kwargs=started).get()

    job.refresh_from_db()
    assert (job.status, job.attempts, job.error) == (Job.Status.RUNNING, 1, "")
    assert len(refusals(caplog)) == 3
    assert all("a replay or a duplicate" in refusal for refusal in refusals(caplog))


def test_a_duplicated_result_is_recorded_once(job, hosts, make_result, caplog):
    start(job, hosts["honest"])
    sent = post_result(job, make_result(job.config.key, [42.0]), hosts["honest"])
    with caplog.at_level(logging.WARNING, logger="leaderboard.services.hosts"):
        tasks.record_result_task.apply(kwargs=sent).get()

    assert Run.objects.count() == 1 and Job.objects.get(pk=job.pk).status == "succeeded"
    assert "a replay or a duplicate" in refusals(caplog)[0]


def test_messages_of_one_delivery_count_only_in_rising_order(job, hosts, caplog):
    start(job, hosts["honest"])
    delivery = sent_delivery(job)
    later, earlier = dispatch.next_sequence() + 10, dispatch.next_sequence()
    for sequence, done in ((later, 2), (earlier, 1)):  # the second arrives late: it is stale
        event = {"phase": "measuring", "done": done, "total": 4}
        tasks.record_progress_task.apply(
            kwargs={"job_id": job.pk, "progress": event}
            | message(
                "progress", job.pk, event, hosts["honest"], delivery=delivery, sequence=sequence
            )  # fmt: skip
        ).get()
    assert Job.objects.get(pk=job.pk).progress["done"] == 2


def test_a_host_never_sent_the_job_cannot_claim_it_and_the_host_that_was_sent_it_can(
    job, hosts, caplog
):
    with caplog.at_level(logging.WARNING, logger="leaderboard.services.hosts"):
        # The rogue host guesses the job's id, but not the delivery the site sent with it.
        start(job, hosts["rogue"], delivery="0" * 32)
        start(job, hosts["rogue"], delivery="")
    assert Job.objects.get(pk=job.pk).host is None
    assert "not for the job's current delivery" in refusals(caplog)[0]
    assert "names no delivery" in refusals(caplog)[1]

    start(job, hosts["honest"])
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and job.host.name == "lab-a"


def test_once_a_job_is_sent_again_the_earlier_delivery_counts_for_nothing(job, hosts, make_result):
    old = sent_delivery(job)
    start(job, hosts["honest"])
    Job.objects.filter(pk=job.pk).update(started_at=job.created_at.replace(year=2000))
    # Its worker was lost: the reconciler queues it again with a new delivery.
    services.requeue_orphaned_jobs(
        executing_task_ids=set(), waiting_task_ids=set(), finishing_job_ids=set(), older_than_s=1
    )
    assert sent_delivery(job) != old

    result = make_result(job.config.key, [42.0])
    tasks.record_result_task.apply(
        kwargs={"job_id": job.pk, "result": result}
        | message("result", job.pk, result, hosts["honest"], delivery=old)
    ).get()
    assert not Run.objects.exists() and Job.objects.get(pk=job.pk).status == "queued"


def test_the_same_delivery_started_again_later_counts_as_another_attempt(job, hosts):
    # The broker handed the same message out again (its worker stopped mid-job): a later
    # sequence, so not a replay; the db side counts the attempt as it did before.
    start(job, hosts["honest"])
    start(job, hosts["honest"])
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and job.attempts == 2


def test_a_result_claiming_an_unregistered_release_fails_the_job_and_marks_nothing_stale(
    job, hosts, make_result
):
    start(job, hosts["honest"])
    post_result(job, make_result(job.config.key, [42.0], release="b999999"), hosts["honest"])

    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert "engine release 'b999999'" in job.error and "--engine-release" in job.error
    assert not Run.objects.exists()
    assert not EngineBuild.objects.filter(release="b999999").exists()


def test_a_host_registered_for_another_release_may_report_it(
    user, models, hardware, enqueued, make_result
):
    host, key = services.register_gpu_host(
        name="lab-new", hardware_slug=hardware.slug, engine_release="b11500"
    )
    job = services.submit_config(owner=user, data=CONFIG, hardware_slug=hardware.slug)
    start(job, (host.name, key))
    post_result(job, make_result(job.config.key, [42.0], release="b11500"), (host.name, key))

    assert Job.objects.get(pk=job.pk).status == Job.Status.SUCCEEDED
    assert Run.objects.get().engine_release == "b11500"
    assert LeaderboardEntry.objects.get().engine_release == "b11500"
    assert selectors.newest_release_number() == 11500


def test_a_measured_row_on_a_release_no_one_asked_for_never_makes_rows_stale(
    job, hosts, make_result
):
    # As a result recorded before hosts' releases were checked could have left it.
    start(job, hosts["honest"])
    post_result(job, make_result(job.config.key, [42.0]), hosts["honest"])
    assert selectors.newest_release_number() == 11434
    Run.objects.update(engine_release="b999999")
    LeaderboardEntry.objects.update(engine_release="b999999")
    EngineBuild.objects.create(release="b999999")
    services.raise_board_version(row_set=True)

    assert selectors.newest_release_number() is None


def test_a_gpu_worker_signs_what_it_sends_with_its_own_key(settings, monkeypatch, hosts):
    name, key = hosts["honest"]
    settings.SPECBOARD_HOST_NAME, settings.SPECBOARD_HOST_KEY = name, key
    sent = []
    monkeypatch.setattr(dispatch, "send", lambda task, *, kwargs, queue, **_: sent.append(kwargs))

    dispatch.send_result(job_id=9, delivery="d1", result={"summary": {"tau": 3.0}})
    dispatch.send_failure(job_id=9, delivery="d1", error="engine crashed", log_tail="oom")

    result, failure = sent
    assert result["host"] == failure["host"] == "lab-a"
    assert result["delivery"] == failure["delivery"] == "d1"
    assert result["sequence"] < failure["sequence"]
    assert signing.verify(
        key=key,
        kind="result",
        job_id=9,
        delivery="d1",
        sequence=result["sequence"],
        body=result["result"],
        signature=result["signature"],
    )
    body = {"error": "engine crashed", "log_tail": "oom"}
    assert signing.verify(
        key=key,
        kind="failure",
        job_id=9,
        delivery="d1",
        sequence=failure["sequence"],
        body=body,
        signature=failure["signature"],
    )


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
        message=HostMessage(
            kind="progress", job_id=job.pk, body=body, host=host, signature=signature,
            delivery=job.delivery, sequence=sequence,
        )
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
