"""API serializers: read-only ones for output, explicit input serializers for writes."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard import comparisons, selectors
from leaderboard.api import energy_fields, spread_fields
from leaderboard.models import (
    Config,
    EngineBuild,
    Hardware,
    Job,
    LeaderboardEntry,
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


class DepthFigureSerializer(serializers.Serializer):
    """One depth of a depth protocol: decode tok/s mean, n, 95% interval, speedup at that depth."""

    input_tokens = serializers.IntegerField()
    n = serializers.IntegerField(allow_null=True)
    mean = serializers.FloatField(allow_null=True)
    ci95_low = serializers.FloatField(allow_null=True)
    ci95_high = serializers.FloatField(allow_null=True)
    speedup = serializers.FloatField(allow_null=True)


def _with_evidence(entries: list[LeaderboardEntry]) -> list[LeaderboardEntry]:
    """Rows with the evidence behind their numbers and their definitions, fetched at once."""
    evidence = selectors.row_evidence(entries=entries)
    for entry in entries:
        entry.evidence = evidence[entry.pk] | {
            "definitions": selectors.row_definitions(entry, evidence[entry.pk])
        }
    return entries


class LeaderboardEntryListSerializer(serializers.ListSerializer):
    """Rows read together: the evidence behind their numbers is fetched once for all of them."""

    def to_representation(self, data):
        return super().to_representation(
            _with_evidence(list(data.all() if hasattr(data, "all") else data))
        )


def _evidence_field(key: str, help_text: str, field=serializers.IntegerField) -> serializers.Field:
    return field(source=f"evidence.{key}", read_only=True, allow_null=True, help_text=help_text)


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
    best_of_batches = serializers.IntegerField(
        source="runs_count", read_only=True, help_text="k: the figures are the best of k batches."
    )
    definitions = serializers.DictField(
        child=serializers.CharField(),
        source="evidence.definitions",
        read_only=True,
        help_text="Each number's definition, n and interval in one line: tokens_per_second, "
        "ci95, n, speedup, acceptance_rate, tau, runs_count.",
    )
    ci95_scope = serializers.SerializerMethodField(
        help_text="What ci95_low/high cover: 'requests' of the best batch, 'across depths' "
        "(requests of different input lengths pooled: see depths) or 'none' (n < 2)."
    )
    acceptance_draft_tokens = _evidence_field("draft_tokens", "Acceptance's denominator.")
    acceptance_accepted_tokens = _evidence_field("draft_accepted", "Acceptance's numerator.")
    tau_verify_steps = _evidence_field("verify_steps", "tau = 1 + accepted / verify steps.")
    baseline_tokens_per_second = _evidence_field(
        "baseline_tokens_per_second", "What speedup divides by.", serializers.FloatField
    )
    depths = DepthFigureSerializer(
        many=True,
        source="evidence.depths",
        read_only=True,
        help_text="Depth protocols: each depth's decode mean, n, 95% interval and speedup.",
    )
    joules_per_token = _evidence_field(
        "joules_per_token",
        "The best batch's NVML energy over its generated tokens, prefill and idle time within "
        "each request included (a concurrent wave's shared out by tokens, an allocation); null "
        "where none was measured (CPU hosts, older results).",
        serializers.FloatField,
    )
    joules_per_accepted_token = _evidence_field(
        "joules_per_accepted_token",
        "Always null: there is no separate energy of an accepted draft token (kept so that "
        "clients reading it do not break).",
        serializers.FloatField,
    )
    roofline_fraction = _evidence_field(
        "roofline_fraction",
        "The best batch's rate over its bandwidth ceiling for the bytes one step reads (target, "
        "K/V cache, draft), derived from its result; a concurrency row's at its lowest level, "
        "aggregate tok/s; null off CUDA.",
        serializers.FloatField,
    )
    roofline_flag = _evidence_field(
        "roofline_flag",
        "'above_ceiling' (impossible, a measurement error), 'far_below' (a one-stream baseline, "
        "likely a CPU fallback) or null.",
        serializers.CharField,
    )

    class Meta:
        model = LeaderboardEntry
        list_serializer_class = LeaderboardEntryListSerializer
        fields = [
            "id", "config_key", "label", "target_name", "spec_label", "protocol", "n_max", "hardware",
            "engine_release", "tps_definition", "tokens_per_second", "n", "stdev", "median",
            "ci95_low", "ci95_high", "end_to_end_tokens_per_second", "speedup", "baseline_config_key",
            "acceptance_rate", "tau", "lossless", "synthetic", "self_reported", "degenerate",
            "retired", "runs_count", "best_run_id", "peak_memory_bytes", "updated_at",
            "test_weights", "best_of_batches", "pooled_mean", "pooled_n", "pooled_ci95_low",
            "pooled_ci95_high", "definitions", "ci95_scope", "acceptance_draft_tokens",
            "acceptance_accepted_tokens", "tau_verify_steps", "baseline_tokens_per_second",
            "pairing_note", "depths", "joules_per_token", "joules_per_accepted_token",
            "roofline_fraction", "roofline_flag",
        ]  # fmt: skip
        read_only_fields = fields

    def to_representation(self, entry: LeaderboardEntry) -> dict:
        # A row read alone (the compare resource) fetches its own evidence.
        if not hasattr(entry, "evidence"):
            _with_evidence([entry])
        return super().to_representation(entry)

    def get_ci95_scope(self, entry: LeaderboardEntry) -> str:
        if entry.evidence["depths"]:
            return "across depths"
        return "requests" if entry.n >= 2 and entry.ci95_low is not None else "none"


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


class LeaderboardQuerySerializer(serializers.Serializer):
    """The leaderboard's filters. By default the rows are the main ranking, as on the page;
    naming a `source` or `include_retired=true` widens them to every row the filters match."""

    target = serializers.CharField(required=False, allow_blank=True, max_length=200)
    hardware = serializers.CharField(required=False, allow_blank=True, max_length=100)
    spec_type = serializers.CharField(required=False, allow_blank=True, max_length=60)
    protocol = serializers.ChoiceField(
        choices=selectors.PROTOCOLS, required=False, allow_blank=True
    )
    source = serializers.ChoiceField(
        choices=list(selectors.SOURCES),
        required=False,
        help_text="Left out: the main ranking only, as on the page (measured by our workers on a "
        "current build, real acceptance, output not degenerate). Named: every row of that "
        "source, flagged ones (synthetic, self-reported, degenerate) included.",
    )
    ordering = serializers.ChoiceField(
        choices=list(selectors.LEADERBOARD_ORDERINGS), required=False, default="tokens_per_second"
    )
    include_retired = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Every row the filters match, retired builds' rows included.",
    )

    def validate(self, attrs: dict) -> dict:
        # The page's default is the main ranking (its "all results" toggle widens it); a query
        # that names a source or asks for retired rows asks for more than the ranking.
        widened = "source" in attrs or attrs["include_retired"]
        return attrs | {"source": attrs.get("source", "all"), "ranked_only": not widened}


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
        # How many and which exist are leaderboard.comparisons' rules, shared with the page.
        return comparisons.requested_keys(value)


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
