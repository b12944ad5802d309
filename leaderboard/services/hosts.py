"""GPU hosts: registering a host with its own key, and deciding what a host may send back.

A community GPU host runs only the GPU worker, with the broker's URL, its name and the key an
admin issued (`manage.py register_gpu_host NAME --hardware SLUG`, shown once). Everything it
sends back is signed with that key (`leaderboard.signing`). The database side accepts a message
only from a registered, unrevoked host of the job's hardware kind with a valid signature, and a
result or failure only from the host that claimed the job with its "started" event; a job whose
host went quiet (its worker died, the broker redelivered it) may be claimed by another host of
that kind. A refused message is logged and changes nothing.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from leaderboard import signing
from leaderboard.models import GpuHost, Hardware, Job
from leaderboard.services.errors import RegistrationError

logger = logging.getLogger(__name__)

MESSAGE_KINDS = ("progress", "result", "failure")


def register_gpu_host(*, name: str, hardware_slug: str) -> tuple[GpuHost, str]:
    """Register a GPU host for a hardware kind; returns the host and its key (shown once)."""
    slug = slugify(name)[:100]
    if not slug:
        raise RegistrationError({"name": ["a host name needs letters or digits"]})
    hardware = Hardware.objects.exclude(queue_name="").filter(slug=hardware_slug).first()
    if hardware is None:
        raise RegistrationError({"hardware": [f"no served hardware kind {hardware_slug!r}"]})
    if GpuHost.objects.filter(name=slug).exists():
        raise RegistrationError({"name": [f"a host named {slug!r} is already registered"]})
    key = signing.new_key()
    host = GpuHost.objects.create(name=slug, hardware=hardware, key=key)
    return host, key


def ensure_gpu_host(*, name: str, hardware_slug: str) -> tuple[GpuHost, str]:
    """The named host of a hardware kind and its key, registered if it is new (quick start)."""
    existing = GpuHost.objects.filter(name=slugify(name)[:100], revoked=False).first()
    if existing is not None and existing.hardware.slug == hardware_slug:
        return existing, existing.key
    return register_gpu_host(name=name, hardware_slug=hardware_slug)


def revoke_gpu_host(*, name: str) -> bool:
    """Stop accepting anything from a host; False if there is no such host."""
    return bool(GpuHost.objects.filter(name=name).update(revoked=True))


def host_message_refusal(
    *, kind: str, job_id: int, body: object, host: str, signature: str
) -> str | None:
    """Why the database side must refuse this message from a GPU host, or None to accept it.

    Accepting a "started" progress event claims the job for the host.
    """
    if kind not in MESSAGE_KINDS:
        return f"unknown message kind {kind!r}"
    if not settings.SPECBOARD_REQUIRE_HOST_SIGNATURES and not host:
        return None
    gpu_host = GpuHost.objects.filter(name=host, revoked=False).first() if host else None
    if gpu_host is None:
        return f"no registered host {host!r}" if host else "the message is not signed"
    if not signing.verify(
        key=gpu_host.key, kind=kind, job_id=job_id, body=body, signature=signature
    ):
        return f"the signature is not host {host!r}'s"
    job = Job.objects.filter(id=job_id).only("id", "hardware_id", "host_id").first()
    if job is None:
        return None  # the services ignore results for unknown jobs themselves
    if job.hardware_id != gpu_host.hardware_id:
        return f"host {host!r} serves another hardware kind"
    now = timezone.now()
    if kind == "progress" and isinstance(body, dict) and body.get("phase") == "started":
        quiet = now - timedelta(seconds=settings.SPECBOARD_HOST_RECLAIM_SECONDS)
        claimed = (
            Job.objects.filter(id=job_id)
            .filter(Q(host__isnull=True) | Q(host=gpu_host) | Q(host_seen_at__lt=quiet))
            .update(host=gpu_host, host_seen_at=now)
        )
        return None if claimed else "another host holds the job"
    if not Job.objects.filter(id=job_id, host=gpu_host).update(host_seen_at=now):
        return f"host {host!r} did not claim the job"
    return None


def accept_host_message(*, kind: str, job_id: int, body: object, host: str, signature: str) -> bool:
    """Whether to record this message from a GPU host; a refusal is logged."""
    refusal = host_message_refusal(
        kind=kind, job_id=job_id, body=body, host=host, signature=signature
    )
    if refusal is not None:
        logger.warning("refused a %s for job %s from host %r: %s", kind, job_id, host, refusal)
        return False
    return True
