"""GPU hosts we do not own: each signs what it sends with its own key, and the database side
records a result only from the host that claimed the job."""

from __future__ import annotations

import logging

import pytest

from leaderboard import dispatch, services, signing, tasks
from leaderboard.models import Job, Run

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


def message(kind: str, job_id: int, body: dict, host: tuple[str, str]) -> dict:
    name, key = host
    return {
        "host": name,
        "signature": signing.sign(key=key, kind=kind, job_id=job_id, body=body),
    }


def start(job: Job, host: tuple[str, str]) -> None:
    started = {"phase": "started"}
    tasks.record_progress_task.apply(
        kwargs={"job_id": job.pk, "progress": started} | message("progress", job.pk, started, host)
    ).get()


def post_result(job: Job, result: dict, sender: tuple[str, str], **override: str) -> None:
    signed = message("result", job.pk, result, sender) | override
    tasks.record_result_task.apply(kwargs={"job_id": job.pk, "result": result} | signed).get()


def test_a_signature_holds_only_for_its_key_and_its_exact_message():
    key, other = signing.new_key(), signing.new_key()
    signature = signing.sign(key=key, kind="result", job_id=3, body={"mean": 5.0})
    assert signing.verify(key=key, kind="result", job_id=3, body={"mean": 5.0}, signature=signature)
    for changed in (
        {"key": other},
        {"kind": "failure"},
        {"job_id": 4},
        {"body": {"mean": 5000.0}},
    ):
        arguments = {"key": key, "kind": "result", "job_id": 3, "body": {"mean": 5.0}} | changed
        assert not signing.verify(**arguments, signature=signature)
    assert not signing.verify(key=key, kind="result", job_id=3, body={}, signature="")


def test_registering_a_host_issues_a_key_once_and_refuses_bad_names(hardware):
    host, key = services.register_gpu_host(name="Lab 4090 #1", hardware_slug=hardware.slug)
    assert host.name == "lab-4090-1" and len(key) == 64 and host.key == key
    for name, hardware_slug, field in (
        ("Lab 4090 #1", hardware.slug, "name"),
        ("!!!", hardware.slug, "name"),
        ("lab-c", "no-such-kind", "hardware"),
    ):
        with pytest.raises(services.RegistrationError) as refused:
            services.register_gpu_host(name=name, hardware_slug=hardware_slug)
        assert field in refused.value.errors


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
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 5, refusals
    assert "did not claim the job" in refusals[0] and "not host 'lab-a'" in refusals[1]
    assert "not signed" in refusals[2] and "another host holds the job" in refusals[3]

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


def test_a_gpu_worker_signs_what_it_sends_with_its_own_key(settings, monkeypatch, hosts):
    name, key = hosts["honest"]
    settings.SPECBOARD_HOST_NAME, settings.SPECBOARD_HOST_KEY = name, key
    sent = []
    monkeypatch.setattr(dispatch, "send", lambda task, *, kwargs, queue, **_: sent.append(kwargs))

    dispatch.send_result(job_id=9, result={"summary": {"tau": 3.0}})
    dispatch.send_failure(job_id=9, error="engine crashed", log_tail="oom")

    result, failure = sent
    assert result["host"] == failure["host"] == "lab-a"
    assert signing.verify(
        key=key, kind="result", job_id=9, body=result["result"], signature=result["signature"]
    )
    body = {"error": "engine crashed", "log_tail": "oom"}
    assert signing.verify(
        key=key, kind="failure", job_id=9, body=body, signature=failure["signature"]
    )
