"""API serializers: read-only ones for output, explicit input serializers for writes."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from pydantic import ValidationError as PydanticValidationError
from rest_framework import serializers

from leaderboard import selectors
from leaderboard.models import (
    Config,
    EngineBuild,
    Hardware,
    Job,
    LeaderboardEntry,
    ModelFile,
    RequestRecord,
    Run,
)
from runner.config import BenchmarkConfig, field_errors


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
    target = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    draft = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    baseline_key = serializers.SlugRelatedField(
        source="baseline", slug_field="key", read_only=True, allow_null=True
    )

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

    class Meta:
        model = Job
        fields = [
            "id", "status", "progress", "config_key", "hardware", "engine_release", "auto_scheduled",
            "baseline_for", "attempts", "error", "log_tail", "run_id", "gpu_seconds",
            "engine_seconds", "token_budget", "created_at", "started_at", "finished_at",
        ]  # fmt: skip
        read_only_fields = fields

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
            key: status[key] for key in ("phase", "done", "total", "tokens", "elapsed_s", "percent")
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
        keys = list(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
        if not 2 <= len(keys) <= 4:
            raise serializers.ValidationError("give two to four distinct config keys")
        return keys


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


# Self-reported result files: the shape of runner.benchmark.run_benchmark's result, checked strictly.

_INT32 = 2**31 - 1
_INT64 = 2**63 - 1


def _number(**options) -> serializers.FloatField:
    return serializers.FloatField(min_value=0, max_value=1e12, **options)


def _count(**options) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=0, max_value=_INT32, **options)


class StrictSerializer(serializers.Serializer):
    """Refuses keys it does not know, naming them, unless `allow_extra` is set."""

    allow_extra = False

    def to_internal_value(self, data):
        if isinstance(data, dict) and not self.allow_extra:
            unknown = sorted(str(key) for key in data if key not in self.fields)
            if unknown:
                raise serializers.ValidationError({key: ["unknown field"] for key in unknown})
        return super().to_internal_value(data)


class StatsSerializer(StrictSerializer):
    n = _count()
    mean = _number(allow_null=True)
    median = _number(allow_null=True)
    stdev = _number(allow_null=True)
    min = _number(allow_null=True)
    max = _number(allow_null=True)
    ci95_low = serializers.FloatField(allow_null=True, min_value=-1e12, max_value=1e12)
    ci95_high = serializers.FloatField(allow_null=True, min_value=-1e12, max_value=1e12)


class SummarySerializer(StrictSerializer):
    allow_extra = True

    decode_tokens_per_second = StatsSerializer()
    end_to_end_tokens_per_second = StatsSerializer()
    ttft_ms = StatsSerializer(required=False, allow_null=True)
    acceptance_rate = serializers.FloatField(
        min_value=0, max_value=1, allow_null=True, required=False
    )
    tau = _number(allow_null=True, required=False)
    draft_tokens = serializers.IntegerField(min_value=0, max_value=_INT64, required=False)
    draft_accepted = serializers.IntegerField(min_value=0, max_value=_INT64, required=False)
    verify_steps = serializers.IntegerField(min_value=0, max_value=_INT64, required=False)
    peak_memory_bytes = serializers.IntegerField(
        min_value=0, max_value=_INT64, allow_null=True, required=False
    )
    memory_kind = serializers.CharField(
        max_length=16, allow_blank=True, allow_null=True, required=False
    )
    speedup = _number(allow_null=True, required=False)
    lossless = serializers.BooleanField(allow_null=True, required=False)
    degenerate = serializers.BooleanField(required=False)
    gpu_seconds = _number(required=False)

    def validate(self, data: dict) -> dict:
        if (data.get("draft_accepted") or 0) > (data.get("draft_tokens") or 0):
            raise serializers.ValidationError({"draft_accepted": ["larger than draft_tokens"]})
        return data


class RequestRowSerializer(StrictSerializer):
    allow_extra = True

    index = _count()
    phase = serializers.CharField(max_length=16, required=False)
    point = _count(allow_null=True, required=False)
    input_tokens = _count(allow_null=True, required=False)
    prompt_n = _count()
    prompt_ms = _number(allow_null=True, required=False)
    predicted_n = _count()
    predicted_ms = _number(allow_null=True, required=False)
    decode_tokens_per_second = _number(allow_null=True)
    end_to_end_tokens_per_second = _number(allow_null=True, required=False)
    ttft_ms = _number(allow_null=True, required=False)
    wall_ms = _number(allow_null=True, required=False)
    draft_n = _count(required=False)
    draft_n_accepted = _count(required=False)
    verify_steps = _count(required=False)
    tau = _number(allow_null=True, required=False)
    accepted_per_position = serializers.ListField(child=_count(), max_length=256, required=False)
    output_sha256 = serializers.RegexField(r"^[0-9a-f]{0,64}$", allow_blank=True, required=False)
    first_divergence = _count(allow_null=True, required=False)


class EngineInfoSerializer(StrictSerializer):
    allow_extra = True

    release = serializers.CharField(max_length=64)
    backend = serializers.CharField(max_length=32, allow_blank=True, required=False)


class ProvenanceSerializer(StrictSerializer):
    allow_extra = True

    command = serializers.CharField(max_length=20_000, allow_blank=True, required=False)
    argv = serializers.ListField(
        child=serializers.CharField(max_length=4096, allow_blank=True),
        max_length=500,
        required=False,
    )


class ResultSectionSerializer(StrictSerializer):
    """One measured config in a result file: its config, summary and per-request records."""

    config = RunnerConfigField()
    config_key = serializers.RegexField(r"^[0-9a-f]{16}$")
    synthetic = serializers.BooleanField()
    summary = SummarySerializer()
    points = serializers.ListField(child=serializers.DictField(), max_length=64, required=False)
    requests = RequestRowSerializer(many=True, max_length=10_000)
    provenance = ProvenanceSerializer()

    def validate(self, data: dict) -> dict:
        config = data["config"]
        if not isinstance(config, dict):
            raise serializers.ValidationError({"config": ["must be a JSON object"]})
        try:
            parsed = BenchmarkConfig.model_validate(config)
        except PydanticValidationError as error:
            raise serializers.ValidationError({"config": field_errors(error)}) from None
        if parsed.key != data["config_key"]:
            raise serializers.ValidationError(
                {"config_key": [f"does not match the config (its key is {parsed.key})"]}
            )
        return data


class ResultFileSerializer(ResultSectionSerializer):
    """A whole result file as `python -m runner run ... --out RESULT.json` writes it."""

    schema_version = serializers.ChoiceField(choices=[1])
    engine = EngineInfoSerializer()
    baseline = ResultSectionSerializer(allow_null=True, required=False)

    def validate(self, data: dict) -> dict:
        data = super().validate(data)
        baseline = data.get("baseline")
        if baseline and BenchmarkConfig.model_validate(baseline["config"]).is_speculative:
            raise serializers.ValidationError({"baseline": ["the baseline config is speculative"]})
        return data


class UploadInputSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="A runner result JSON file (python -m runner run ... --out RESULT.json)."
    )
    hardware = serializers.CharField(
        max_length=200, help_text="The GPU the result was measured on, e.g. 'RTX 4090'."
    )


class UploadReportSerializer(serializers.Serializer):
    hardware = serializers.CharField()
    self_reported = serializers.BooleanField()
    runs = RunSerializer(many=True)
