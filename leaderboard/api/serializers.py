"""API serializers: read-only ones for output, explicit input serializers for writes."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard import selectors
from leaderboard.models import (
    Config,
    Hardware,
    Job,
    LeaderboardEntry,
    ModelFile,
    RequestRecord,
    Run,
)


class ModelFileSerializer(serializers.ModelSerializer):
    class Meta:
        model = ModelFile
        fields = [
            "id",
            "name",
            "path",
            "sha256",
            "size_bytes",
            "architecture",
            "role",
            "metadata",
            "created_at",
        ]
        read_only_fields = fields


class HardwareSerializer(serializers.ModelSerializer):
    served = serializers.SerializerMethodField()

    class Meta:
        model = Hardware
        fields = [
            "slug",
            "gpu_name",
            "memory_bytes",
            "driver",
            "cuda",
            "host",
            "self_reported",
            "served",
        ]
        read_only_fields = fields

    def get_served(self, hardware: Hardware) -> bool:
        return bool(hardware.queue_name)


class ConfigSerializer(serializers.ModelSerializer):
    target = serializers.SlugRelatedField(slug_field="name", read_only=True)
    draft = serializers.SlugRelatedField(slug_field="name", read_only=True)
    baseline_key = serializers.SlugRelatedField(source="baseline", slug_field="key", read_only=True)

    class Meta:
        model = Config
        fields = [
            "key", "label", "target_name", "target", "draft", "spec_label", "protocol", "n_max",
            "ctx_size", "synthetic", "self_reported", "baseline_key", "canonical", "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class LeaderboardEntrySerializer(serializers.ModelSerializer):
    config_key = serializers.CharField(source="config.key", read_only=True)
    label = serializers.CharField(source="config.label", read_only=True)
    target_name = serializers.CharField(source="config.target_name", read_only=True)
    spec_label = serializers.CharField(source="config.spec_label", read_only=True)
    protocol = serializers.CharField(source="config.protocol", read_only=True)
    n_max = serializers.IntegerField(source="config.n_max", read_only=True, allow_null=True)
    hardware = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    baseline_config_key = serializers.CharField(
        source="baseline_entry.config.key", read_only=True, allow_null=True, default=None
    )
    best_run_id = serializers.IntegerField(read_only=True, allow_null=True)

    class Meta:
        model = LeaderboardEntry
        fields = [
            "id", "config_key", "label", "target_name", "spec_label", "protocol", "n_max", "hardware",
            "engine_release", "tps_definition", "tokens_per_second", "n", "stdev", "median",
            "ci95_low", "ci95_high", "end_to_end_tokens_per_second", "speedup", "baseline_config_key",
            "acceptance_rate", "tau", "lossless", "synthetic", "self_reported", "degenerate",
            "retired", "runs_count", "best_run_id", "peak_memory_bytes", "updated_at",
        ]  # fmt: skip
        read_only_fields = fields


class RequestRecordSerializer(serializers.ModelSerializer):
    class Meta:
        model = RequestRecord
        exclude = ["id", "run"]
        read_only_fields = [
            f.name for f in RequestRecord._meta.fields if f.name not in ("id", "run")
        ]


class RunSerializer(serializers.ModelSerializer):
    config_key = serializers.CharField(source="config.key", read_only=True)
    hardware = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    job_id = serializers.IntegerField(read_only=True, allow_null=True)
    tokens_per_second = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = Run
        exclude = ["config", "job", "raw_result", "import_fingerprint"]
        read_only_fields = [f.name for f in Run._meta.fields]


class RunDetailSerializer(RunSerializer):
    requests = RequestRecordSerializer(many=True, read_only=True)


class JobSerializer(serializers.ModelSerializer):
    config_key = serializers.CharField(source="config.key", read_only=True)
    hardware = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    progress = serializers.SerializerMethodField()
    run_id = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id", "status", "progress", "config_key", "hardware", "engine_release", "auto_scheduled",
            "baseline_for", "attempts", "error", "log_tail", "run_id", "created_at", "started_at",
            "finished_at",
        ]  # fmt: skip
        read_only_fields = fields

    def get_progress(self, job: Job) -> dict:
        status = selectors.job_status(job=job)
        return {
            key: status[key] for key in ("phase", "done", "total", "tokens", "elapsed_s", "percent")
        }

    def get_run_id(self, job: Job) -> int | None:
        return selectors.job_status(job=job)["run_id"]


# An object in the schema; the runner's pydantic schema (JSON Schema 2020-12) needs OpenAPI 3.1.
@extend_schema_field(OpenApiTypes.OBJECT)
class RunnerConfigField(serializers.JSONField):
    """A runner config as JSON; the service validates it with the runner's pydantic schema."""


class SubmissionInputSerializer(serializers.Serializer):
    hardware = serializers.CharField(
        required=False, max_length=100, help_text="Hardware slug; optional when only one is served."
    )
    config = RunnerConfigField(
        help_text="A runner benchmark config: target_model and draft_model are registered model paths."
    )


class ImportInputSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="leaderboard_runs.csv in the seed kit's format.")
    hardware = serializers.CharField(
        max_length=200, help_text="The GPU the results were measured on."
    )
    baseline_run_name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    target_name = serializers.CharField(max_length=200, required=False, allow_blank=True)


class ImportReportSerializer(serializers.Serializer):
    hardware = serializers.CharField(source="hardware.slug")
    baseline_run_name = serializers.CharField()
    runs_created = serializers.IntegerField()
    runs_skipped = serializers.IntegerField()
    config_keys = serializers.SerializerMethodField()

    def get_config_keys(self, report) -> list[str]:
        return [config.key for config in report.configs]


class LeaderboardQuerySerializer(serializers.Serializer):
    target = serializers.CharField(required=False, allow_blank=True, max_length=200)
    hardware = serializers.CharField(required=False, allow_blank=True, max_length=100)
    spec_type = serializers.CharField(required=False, allow_blank=True, max_length=60)
    protocol = serializers.ChoiceField(
        choices=selectors.PROTOCOLS, required=False, allow_blank=True
    )
    source = serializers.ChoiceField(choices=list(selectors.SOURCES), required=False, default="all")
    ordering = serializers.ChoiceField(
        choices=list(selectors.LEADERBOARD_ORDERINGS), required=False, default="tokens_per_second"
    )
    include_retired = serializers.BooleanField(required=False, default=False)
