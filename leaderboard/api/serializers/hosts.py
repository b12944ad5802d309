"""The hosts resource's serializers: each hardware kind's queue and the GPU hosts serving it.

Each registered host's status ("online", "offline", "unknown" when the broker cannot tell,
"revoked"), running job and engine release, as `selectors.host_board` reads them; a host's key
is never part of it.
"""

from __future__ import annotations

from rest_framework import serializers


class HostJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    config_key = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # DRF moves declared fields off the class; stubs see Field.label
    phase = serializers.CharField()
    percent = serializers.IntegerField()
    started_at = serializers.DateTimeField(allow_null=True)


class HostSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=["online", "offline", "unknown", "revoked"])
    reason = serializers.CharField(help_text="Why the status is what it is, in one line.")
    last_message_at = serializers.DateTimeField(
        allow_null=True, help_text="When the host last sent a signed message about a job."
    )
    running_job = HostJobSerializer(allow_null=True)
    engine_release = serializers.CharField(
        help_text="The release of the latest run it measured, else of the latest job it claimed."
    )
    engine_release_from = serializers.ChoiceField(choices=["run", "job", ""])
    revoked = serializers.BooleanField()
    registered_at = serializers.DateTimeField()


class HardwareHostsSerializer(serializers.Serializer):
    slug = serializers.CharField()
    gpu_name = serializers.CharField()
    queue = serializers.CharField()
    queued_jobs = serializers.IntegerField(help_text="Jobs queued in the database.")
    broker_waiting = serializers.IntegerField(
        allow_null=True, help_text="Messages waiting in the broker's queue (Redis only)."
    )
    running_jobs = serializers.IntegerField()
    unclaimed_running = HostJobSerializer(
        many=True, help_text="Running jobs that no registered host of this kind holds."
    )
    workers_answering = serializers.IntegerField(
        allow_null=True, help_text="Live workers consuming the queue; null when unknown."
    )
    online_hosts = serializers.IntegerField()
    hosts = HostSerializer(many=True)


class HostBoardSerializer(serializers.Serializer):
    checked_at = serializers.DateTimeField()
    workers_known = serializers.BooleanField(
        help_text="Whether the broker answered which workers are alive."
    )
    online_window_s = serializers.IntegerField(
        help_text="A host that sent a signed message within this many seconds is online."
    )
    hardware = HardwareHostsSerializer(many=True)
