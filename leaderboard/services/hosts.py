"""GPU hosts: registering a host with its own key, and deciding what a host may send back.

A community GPU host runs only the GPU worker, with the broker's URL, its name and the key an
admin issued (`manage.py register_gpu_host NAME --hardware SLUG`, shown once). Everything it
sends back is signed with that key (`leaderboard.messaging.signing`) over the job, the delivery
(the nonce the site put in the job message it sent; every re-send has a fresh one) and a sequence
number.

The database side accepts a message only from a registered, unrevoked host of the job's hardware
kind, with a valid signature, for the job's current delivery and with a sequence above the last
one it accepted for that delivery: a replayed or duplicated message is a logged no-op, and a
message for a delivery the site has since replaced (a re-send) counts for nothing. A host claims
a job with its "started" event, which only the delivery the site sent to the job's queue can
carry; a result or failure then counts only from the host that claimed it. A job whose host went
quiet may be claimed by another host of that kind holding the same delivery (the broker gave it
the same message again). A result's engine release must be the job's own or the one an admin
registered the host for. A host claims a job only with its kind's GPUs: those its "started"
event advertises (what NVML shows its engine), else those it advertised at registration; a kind
of several GPUs ("2x RTX 3090 24GB") is claimed only by a host that said it has them, and no
host with more or fewer GPUs visible than its kind has claims one at all
(`services.registry.gpus_serve_kind_problem`). A refused message is logged and changes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.text import slugify

from leaderboard.messaging import signing
from leaderboard.models import GpuHost, Hardware, Job
from leaderboard.services.errors import RegistrationError
from leaderboard.services.jobs import record_failure, record_progress
from leaderboard.services.registry import gpus_serve_kind_problem
from leaderboard.services.results import record_result

logger = logging.getLogger(__name__)

MESSAGE_KINDS = ("progress", "result", "failure")
# Sequence numbers are milliseconds since the epoch (leaderboard.messaging.dispatch.next_sequence),
# stored in a 64-bit column.
_MAX_SEQUENCE = 2**63 - 1


def register_gpu_host(
    *, name: str, hardware_slug: str, engine_release: str = "", gpus: object = None
) -> tuple[GpuHost, str]:
    """Register a GPU host for a hardware kind (and, optionally, the llama.cpp release it runs
    when that is not the site's, and the GPUs it advertises: `python -m runner gpus --json` on
    the host, which must be the kind's); returns the host and its key (shown once)."""
    slug = slugify(name)[:100]
    if not slug:
        raise RegistrationError({"name": ["a host name needs letters or digits"]})
    hardware = Hardware.objects.exclude(queue_name="").filter(slug=hardware_slug).first()
    if hardware is None:
        raise RegistrationError({"hardware": [f"no served hardware kind {hardware_slug!r}"]})
    if GpuHost.objects.filter(name=slug).exists():
        raise RegistrationError({"name": [f"a host named {slug!r} is already registered"]})
    release = engine_release.strip()
    if len(release) > 64 or any(character.isspace() for character in release):
        raise RegistrationError({"engine_release": ["a release is one word, like b11434"]})
    if gpus is not None and (problem := gpus_serve_kind_problem(hardware=hardware, gpus=gpus)):
        raise RegistrationError({"gpus": [problem]})
    key = signing.new_key()
    host = GpuHost.objects.create(
        name=slug,
        hardware=hardware,
        key=key,
        engine_release=release,
        # Past the check above, GPUs that were given are a list.
        gpus=_advertised(gpus) if isinstance(gpus, list) else [],
    )
    return host, key


def _advertised(gpus: list[dict]) -> list[dict]:
    """What the site keeps of a host's advertised GPUs: each one's name and memory, in order."""
    return [{"name": gpu["name"], "memory_bytes": gpu.get("memory_bytes")} for gpu in gpus]


def _gpus_refusal(host: GpuHost, body: dict) -> str | None:
    """Why a host may not claim a job of its kind with the GPUs it shows: those its "started"
    event advertises (runner.jobs.started_event), else those it advertised at registration. A
    kind of several GPUs is claimed only by a host that said it has them."""
    hardware = host.hardware
    advertised = body.get("gpus", host.gpus or None)
    if advertised is None:
        if hardware.gpu_count == 1:
            return None
        return f"host {host.name!r} advertised no GPUs, and {hardware.label} needs its GPUs seen"
    if problem := gpus_serve_kind_problem(hardware=hardware, gpus=advertised):
        return f"host {host.name!r} cannot claim a job of {hardware.slug}: {problem}"
    return None


def ensure_gpu_host(*, name: str, hardware_slug: str) -> tuple[GpuHost, str]:
    """The named host of a hardware kind and its key, registered if it is new (quick start)."""
    existing = GpuHost.objects.filter(name=slugify(name)[:100], revoked=False).first()
    if existing is not None and existing.hardware.slug == hardware_slug:
        return existing, existing.key
    return register_gpu_host(name=name, hardware_slug=hardware_slug)


def revoke_gpu_host(*, name: str) -> bool:
    """Stop accepting anything from a host; False if there is no such host."""
    return bool(GpuHost.objects.filter(name=name).update(revoked=True))


@dataclass(frozen=True)
class HostMessage:
    """One message a GPU host sent back, as its task received it: what it says (its kind, the
    job and the body) and what proves who sent it for which delivery of the job (the host's
    name, its signature, the delivery and the sequence number, `leaderboard.messaging.signing`)."""

    kind: str
    job_id: int
    # The keyword arguments of the task's body (`leaderboard.tasks`), as JSON decoded them.
    body: dict[str, Any]
    host: str = ""
    signature: str = ""
    delivery: str = ""
    sequence: int = 0

    def signed_with(self, key: str) -> bool:
        """Whether the message carries the holder of `key`'s signature over exactly itself."""
        return signing.verify(
            key=key,
            kind=self.kind,
            job_id=self.job_id,
            delivery=self.delivery,
            sequence=self.sequence,
            body=self.body,
            signature=self.signature,
        )

    @property
    def claims(self) -> bool:
        """Whether it is the "started" progress event, with which a host claims its job."""
        return (
            self.kind == "progress"
            and isinstance(self.body, dict)
            and self.body.get("phase") == "started"
        )


def _sender(message: HostMessage) -> GpuHost | str | None:
    """The registered host that signed this message, None for an unsigned message the settings
    allow, or why it cannot be anyone's."""
    host = message.host
    if not settings.SPECBOARD_REQUIRE_HOST_SIGNATURES and not host:
        return None
    gpu_host = (
        GpuHost.objects.filter(name=host, revoked=False).select_related("hardware").first()
        if isinstance(host, str) and host
        else None
    )
    if gpu_host is None:
        return f"no registered host {host!r}" if host else "the message is not signed"
    if not message.signed_with(gpu_host.key):
        return f"the signature is not host {host!r}'s"
    return gpu_host


def _envelope_refusal(message: HostMessage) -> str | None:
    """Why a message's kind, delivery or sequence number cannot be any host's, or None."""
    delivery, sequence = message.delivery, message.sequence
    if not isinstance(delivery, str) or not delivery:
        return "the message names no delivery"
    if isinstance(sequence, bool) or not isinstance(sequence, int):
        return "the message has no sequence number"
    if not 0 < sequence <= _MAX_SEQUENCE:
        return f"sequence number {sequence} is out of range"
    return None


def host_message_refusal(*, message: HostMessage) -> str | None:
    """Why the database side must refuse this message from a GPU host, or None to accept it.

    Accepting a message raises the delivery's sequence to its own; accepting a "started"
    progress event claims the job for the host.
    """
    if message.kind not in MESSAGE_KINDS:
        return f"unknown message kind {message.kind!r}"
    if not settings.SPECBOARD_REQUIRE_HOST_SIGNATURES and not message.host and not message.delivery:
        return None  # a deployment that trusts unsigned messages, from a worker of before
    if refusal := _envelope_refusal(message):
        return refusal
    sender = _sender(message)
    if isinstance(sender, str):
        return sender
    job = Job.objects.filter(id=message.job_id).only("id", "hardware_id", "delivery").first()
    if job is None:
        return None  # the services ignore results for unknown jobs themselves
    if refusal := _job_refusal(message, sender, job):
        return refusal
    if message.claims:
        return _claim_refusal(message, sender)
    return _advance_refusal(message, sender)


def _job_refusal(message: HostMessage, sender: GpuHost | None, job: Job) -> str | None:
    """Why the job is not this message's: another kind's, or another delivery's."""
    if sender is not None and job.hardware_id != sender.hardware_id:
        return f"host {message.host!r} serves another hardware kind"
    if message.delivery != job.delivery:
        return (
            "the message is not for the job's current delivery (a replay, a job sent again "
            "since, or one this host was never sent)"
        )
    return None


def _advance_refusal(message: HostMessage, sender: GpuHost | None) -> str | None:
    """Raise the delivery's sequence to the message's for the host holding the job, or say why
    it may not."""
    fresh = _fresh(message)
    if fresh.filter(host=sender).update(
        host_seen_at=timezone.now(), delivery_sequence=message.sequence
    ):
        return None
    return _why_not_fresh(message) or f"host {message.host!r} did not claim the job"


def _fresh(message: HostMessage) -> QuerySet[Job]:
    """The job, where the message's sequence is above the last its delivery accepted."""
    return Job.objects.filter(
        id=message.job_id, delivery=message.delivery, delivery_sequence__lt=message.sequence
    )


def _claim_refusal(message: HostMessage, sender: GpuHost | None) -> str | None:
    """Claim the job for the sender of a "started" event, or say why it may not: it must show
    its kind's GPUs, and the job must be unclaimed, its own, or held by a host gone quiet."""
    body = message.body if isinstance(message.body, dict) else {}
    if sender is not None and (refusal := _gpus_refusal(sender, body)):
        return refusal
    now = timezone.now()
    quiet = now - timedelta(seconds=settings.SPECBOARD_HOST_RECLAIM_SECONDS)
    holder = Q(host__isnull=True) | Q(host_seen_at__lt=quiet)
    if sender is not None:
        holder |= Q(host=sender)
    claimed = _fresh(message).filter(holder)
    if claimed.update(host=sender, host_seen_at=now, delivery_sequence=message.sequence):
        if sender is not None and "gpus" in body:
            # What the host's engine saw when it claimed: the /hosts/ page's and the next
            # claim's record of its GPUs.
            GpuHost.objects.filter(pk=sender.pk).update(gpus=_advertised(body["gpus"]))
        return None
    return _why_not_fresh(message) or "another host holds the job"


def _why_not_fresh(message: HostMessage) -> str | None:
    sequence = message.sequence
    last = Job.objects.filter(id=message.job_id).values_list("delivery_sequence", flat=True).first()
    if last is not None and sequence <= last:
        return f"a replay or a duplicate (sequence {sequence}, last accepted {last}): ignored"
    return None


def accept_host_message(*, message: HostMessage) -> bool:
    """Whether to record this message from a GPU host; a refusal is logged."""
    refusal = host_message_refusal(message=message)
    if refusal is not None:
        logger.warning(
            "refused a %s for job %s from host %r: %s",
            message.kind,
            message.job_id,
            message.host,
            refusal,
        )
        return False
    return True


def result_release_refusal(*, job_id: int, result: object) -> str | None:
    """Why a claimed job's result may not carry the engine release it names, or None: it must
    be the job's own release or the one an admin registered the job's host for."""
    engine = result.get("engine") if isinstance(result, dict) else None
    release = engine.get("release") if isinstance(engine, dict) else None
    if not isinstance(release, str) or not release:
        return None  # the result model refuses a malformed one; none means the job's own
    job = Job.objects.filter(id=job_id).select_related("host").first()
    if job is None:
        return None
    registered = job.host.engine_release if job.host is not None else ""
    if release in {job.engine_release, registered}:
        return None
    allowed = " or ".join(repr(r) for r in dict.fromkeys([job.engine_release, registered]) if r)
    return (
        f"the result names engine release {release[:64]!r}, but this job may only report "
        f"{allowed} (an admin registers a host's release: register_gpu_host --engine-release)"
    )


def record_host_message(*, message: HostMessage) -> bool:
    """Record a GPU host's progress event, result or failure if that host may send it; False
    when it was refused (logged).

    Accepting and recording are one transaction: a task retried after a database error is not
    mistaken for a replay of a message that was accepted and then never recorded.
    """
    job_id, body = message.job_id, message.body
    with transaction.atomic():
        if not accept_host_message(message=message):
            return False
        if message.kind == "progress":
            record_progress(job_id=job_id, progress=body)
        elif message.kind == "failure":
            record_failure(job_id=job_id, error=body["error"], log_tail=body["log_tail"])
        elif (problem := result_release_refusal(job_id=job_id, result=body)) is not None:
            logger.warning(
                "refused a result for job %s from host %r: %s", job_id, message.host, problem
            )
            record_failure(job_id=job_id, error=problem)
            return False
        else:
            record_result(job_id=job_id, result=body)
    return True
