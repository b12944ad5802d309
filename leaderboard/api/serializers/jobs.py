"""The jobs resource's serializer: a job's status, live progress, cost and place in the queue.

Every field beyond the job's own columns reads one report (`selectors.job_report`: its status,
progress and cost, and while queued its position and estimated start), which the view reads
once per job (`api.finished.job`).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.api.finished import FinishedJob
from leaderboard.models import Hardware, Job

PROGRESS_FIELDS = (
    "phase", "done", "total", "tokens", "elapsed_s", "percent", "downloaded_bytes", "total_bytes",
    "download",
)  # fmt: skip


class TokenBudgetSerializer(serializers.Serializer):
    requests = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    generated_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()


class JobSerializer(serializers.ModelSerializer):
    config_key = serializers.CharField(source="config.key", read_only=True)
    hardware: serializers.SlugRelatedField[Hardware] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    progress = serializers.SerializerMethodField()
    run_id = serializers.SerializerMethodField()
    gpu_seconds = serializers.SerializerMethodField(
        help_text="Seconds the GPU was held for the run (None until it succeeded)."
    )
    engine_seconds = serializers.SerializerMethodField(
        help_text="Seconds llama-server was held, paired baseline included (GPU or not)."
    )
    token_budget = serializers.SerializerMethodField(
        help_text="Requests and tokens the protocol will cost, warm-ups included, before it runs."
    )
    queue_position = serializers.SerializerMethodField(
        help_text="While queued: its place in its hardware's queue, 1 is next (else null); in "
        "a queue of over 1,000 jobs, as the queue stood up to a second ago."
    )
    estimated_start = serializers.SerializerMethodField(
        help_text="While queued: when it should start, from the hardware's median job duration "
        "(null when not queued or without measured jobs)."
    )

    class Meta:
        model = Job
        fields = [
            "id", "status", "progress", "config_key", "hardware", "engine_release", "auto_scheduled",
            "baseline_for", "attempts", "error", "log_tail", "run_id", "gpu_seconds",
            "engine_seconds", "token_budget", "created_at", "started_at", "finished_at",
            "queue_position", "estimated_start",
        ]  # fmt: skip
        read_only_fields = fields

    def get_progress(self, job: FinishedJob) -> dict:
        return {key: job.report[key] for key in PROGRESS_FIELDS}

    def get_run_id(self, job: FinishedJob) -> int | None:
        return job.report["run_id"]

    def get_gpu_seconds(self, job: FinishedJob) -> float | None:
        return job.report["gpu_seconds"]

    def get_engine_seconds(self, job: FinishedJob) -> float | None:
        return job.report["engine_seconds"]

    @extend_schema_field(TokenBudgetSerializer(allow_null=True))
    def get_token_budget(self, job: FinishedJob) -> dict | None:
        return job.report["token_budget"]

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_queue_position(self, job: FinishedJob) -> int | None:
        return job.report["queue_position"]

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_estimated_start(self, job: FinishedJob) -> str | None:
        start = job.report["estimated_start"]
        return serializers.DateTimeField().to_representation(start) if start else None
