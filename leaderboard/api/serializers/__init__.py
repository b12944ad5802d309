"""API serializers: read-only ones for output, explicit input serializers for writes.

The leaderboard rows' own live in `serializers.board`; every serializer is importable from here.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard import selectors
from leaderboard.api import energy_fields, spread_fields
from leaderboard.api.serializers.board import (
    DepthFigureSerializer as DepthFigureSerializer,
)
from leaderboard.api.serializers.board import (
    LeaderboardEntryListSerializer as LeaderboardEntryListSerializer,
)
from leaderboard.api.serializers.board import (
    LeaderboardEntrySerializer,
)
from leaderboard.api.serializers.board import (
    LeaderboardQuerySerializer as LeaderboardQuerySerializer,
)
from leaderboard.models import (
    Config,
    EngineBuild,
    Hardware,
    Job,
    ModelFile,
    ModelRequest,
    RequestRecord,
    Run,
)


class ModelFileSerializer(serializers.ModelSerializer):
    class Meta:
        model = ModelFile
        fields = [
            "id", "name", "path", "sha256", "size_bytes", "architecture", "role", "metadata",
            "created_at", "hf_repo", "hf_file", "hf_revision",
        ]  # fmt: skip
        read_only_fields = fields


class HardwareSerializer(serializers.ModelSerializer):
    served = serializers.SerializerMethodField()

    class Meta:
        model = Hardware
        fields = [
            "slug", "gpu_name", "memory_bytes", "driver", "cuda", "host", "self_reported", "served",
        ]  # fmt: skip
        read_only_fields = fields

    def get_served(self, hardware: Hardware) -> bool:
        return bool(hardware.queue_name)


class ConfigSerializer(serializers.ModelSerializer):
    target = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    draft = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    baseline_key = serializers.SlugRelatedField(
        source="baseline", slug_field="key", read_only=True, allow_null=True
    )
    energy = energy_fields.ConfigEnergyField()
    roofline = energy_fields.ConfigRooflineField()

    class Meta:
        model = Config
        list_serializer_class = energy_fields.ConfigListSerializer
        fields = [
            "key", "label", "target_name", "target", "draft", "spec_label", "protocol", "n_max",
            "ctx_size", "synthetic", "self_reported", "baseline_key", "canonical", "created_at",
            "energy", "roofline",
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
    energy = energy_fields.RunEnergyField()
    roofline = energy_fields.RunRooflineField()

    class Meta:
        model = Run
        exclude = ["config", "job", "raw_result", "import_fingerprint"]
        read_only_fields = [f.name for f in Run._meta.fields]

    def to_representation(self, run: Run) -> dict:
        data = super().to_representation(run)  # One request has no spread (Run.SPREAD_FIELDS).
        return data | dict.fromkeys(Run.SPREAD_FIELDS) if run.n < 2 else data


class RunDetailSerializer(RunSerializer):
    requests = RequestRecordSerializer(many=True, read_only=True)
    acceptance_spread = spread_fields.RunAcceptanceSpreadField()


class TokenBudgetSerializer(serializers.Serializer):
    requests = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    generated_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()


class JobSerializer(serializers.ModelSerializer):
    config_key = serializers.CharField(source="config.key", read_only=True)
    hardware = serializers.SlugRelatedField(slug_field="slug", read_only=True)
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
        help_text="While queued: its place in its hardware's queue, 1 is next (else null)."
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

    def _standing(self, job: Job) -> dict:
        cached = getattr(self, "_standings", None)
        if cached is None:
            cached = self._standings = {}
        if job.pk not in cached:
            cached[job.pk] = selectors.queue_standing(job=job)
        return cached[job.pk]

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_queue_position(self, job: Job) -> int | None:
        return self._standing(job)["queue_position"]

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_estimated_start(self, job: Job) -> str | None:
        start = self._standing(job)["estimated_start"]
        return serializers.DateTimeField().to_representation(start) if start else None

    def _status(self, job: Job) -> dict:
        # One status per job, however many fields read it.
        cached = getattr(self, "_statuses", None)
        if cached is None:
            cached = self._statuses = {}
        if job.pk not in cached:
            cached[job.pk] = selectors.job_status(job=job)
        return cached[job.pk]

    def get_progress(self, job: Job) -> dict:
        status = self._status(job)
        return {
            key: status[key]
            for key in ("phase", "done", "total", "tokens", "elapsed_s", "percent")
            + ("downloaded_bytes", "total_bytes", "download")
        }

    def get_run_id(self, job: Job) -> int | None:
        return self._status(job)["run_id"]

    def get_gpu_seconds(self, job: Job) -> float | None:
        return self._status(job)["gpu_seconds"]

    def get_engine_seconds(self, job: Job) -> float | None:
        return self._status(job)["engine_seconds"]

    @extend_schema_field(TokenBudgetSerializer(allow_null=True))
    def get_token_budget(self, job: Job) -> dict | None:
        return self._status(job)["token_budget"]


# The runner's pydantic schema, converted to OpenAPI 3.0 by leaderboard.api.schema's hook.
@extend_schema_field({"$ref": "#/components/schemas/BenchmarkConfig"})
class RunnerConfigField(serializers.JSONField):
    """A runner config as JSON; the service validates it with the runner's pydantic schema."""


class SubmissionInputSerializer(serializers.Serializer):
    hardware = serializers.CharField(
        required=False, max_length=100, help_text="Hardware slug; optional when only one is served."
    )
    config = RunnerConfigField(
        help_text="A runner benchmark config: target_model and draft_model are registered model paths."
    )


class AllowanceSerializer(serializers.Serializer):
    submissions_limit = serializers.IntegerField(help_text="Submissions allowed per period.")
    submissions_period_s = serializers.IntegerField(help_text="The period, in seconds.")
    submissions_left = serializers.IntegerField()
    job_tokens_limit = serializers.IntegerField(help_text="Tokens one job may use.")
    daily_tokens_limit = serializers.IntegerField(help_text="Tokens a user may use in 24 hours.")
    daily_tokens_left = serializers.IntegerField()


class ImportInputSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="leaderboard_runs.csv in the seed kit's format.")
    publish_name = serializers.BooleanField(
        default=False, help_text="Show your user name in the results' provenance (default: no)."
    )
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


class ModelRegistrationSerializer(serializers.Serializer):
    path = serializers.CharField(
        max_length=255, help_text="The GGUF file, relative to the server's models directory."
    )
    role = serializers.ChoiceField(choices=ModelFile.Role.values, required=False)
    name = serializers.CharField(max_length=200, required=False)


class EngineBuildSerializer(serializers.ModelSerializer):
    class Meta:
        model = EngineBuild
        fields = ["release", "retired", "note", "first_seen"]
        read_only_fields = fields


class RetireBuildInputSerializer(serializers.Serializer):
    note = serializers.CharField(max_length=300, required=False, allow_blank=True)


class RetireBuildReportSerializer(serializers.Serializer):
    release = serializers.CharField()
    retired = serializers.BooleanField()
    entries_retired = serializers.IntegerField()


class RunQuerySerializer(serializers.Serializer):
    config = serializers.CharField(required=False, allow_blank=True, max_length=64)
    hardware = serializers.CharField(required=False, allow_blank=True, max_length=100)


class CompareQuerySerializer(serializers.Serializer):
    keys = serializers.CharField(
        max_length=200,
        help_text="Two to four config keys, comma-separated; the first is the reference.",
    )

    def validate_keys(self, value: str) -> list[str]:
        # How many and which exist are selectors.compare' rules, shared with the page.
        return selectors.requested_keys(value)


class DifferenceSerializer(serializers.Serializer):
    config_key = serializers.CharField()
    relative_to = serializers.CharField()
    difference = serializers.FloatField(
        allow_null=True, help_text="This config's mean tok/s minus the reference's."
    )
    ci95_low = serializers.FloatField(allow_null=True)
    ci95_high = serializers.FloatField(allow_null=True)
    degrees_of_freedom = serializers.FloatField(allow_null=True)
    note = serializers.CharField()


class CompareColumnSerializer(serializers.Serializer):
    config = ConfigSerializer()
    entry = LeaderboardEntrySerializer(allow_null=True)


class CompareSerializer(serializers.Serializer):
    configs = CompareColumnSerializer(many=True)
    differences = DifferenceSerializer(many=True)


class UploadInputSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="A runner result JSON file (python -m runner run ... --out RESULT.json)."
    )
    publish_name = serializers.BooleanField(
        default=False, help_text="Show your user name in the results' provenance (default: no)."
    )
    hardware = serializers.CharField(
        max_length=200, help_text="The GPU the result was measured on, e.g. 'RTX 4090'."
    )


class UploadReportSerializer(serializers.Serializer):
    hardware = serializers.CharField()
    self_reported = serializers.BooleanField()
    runs = RunSerializer(many=True)


class HubModelRegistrationSerializer(serializers.Serializer):
    hf_repo = serializers.CharField(
        max_length=200, help_text="The Hugging Face repository, e.g. unsloth/Qwen3-8B-GGUF."
    )
    hf_file = serializers.CharField(max_length=255, help_text="The .gguf file's path in it.")
    revision = serializers.CharField(
        max_length=255,
        required=False,
        allow_blank=True,
        help_text="A branch, tag or commit (default: main); stored as the commit it resolves to.",
    )
    role = serializers.ChoiceField(choices=ModelFile.Role.values, required=False)
    name = serializers.CharField(max_length=200, required=False)


class ModelRequestInputSerializer(serializers.Serializer):
    hf_repo = serializers.CharField(max_length=200)
    hf_file = serializers.CharField(max_length=255)
    revision = serializers.CharField(max_length=255, required=False, allow_blank=True)


class ModelRequestSerializer(serializers.ModelSerializer):
    model = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)

    class Meta:
        model = ModelRequest
        fields = [
            "id", "hf_repo", "hf_file", "revision", "state", "note", "model", "created_at",
            "decided_at",
        ]  # fmt: skip
        read_only_fields = fields
