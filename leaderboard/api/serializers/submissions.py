"""What users send in: a config to be measured, a seed-kit CSV import, a runner result upload.

The input serializers check what the request carries before any service runs: a file over
SPECBOARD_MAX_IMPORT_BYTES is a 413, and an uploaded result file is parsed as strict JSON and
checked by the runner's one result model (`runner.results.load_result`), its problems a 400 under
`file` by field. The config itself is checked by the submissions service, whose refusals the
API's exception handler answers (`leaderboard.api.errors`).
"""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from drf_spectacular.utils import extend_schema_field
from rest_framework import exceptions, serializers

from leaderboard.api.parsers import PayloadTooLarge, parse_json_bytes
from leaderboard.api.serializers.runs import RunSerializer
from runner.errors import ResultError
from runner.results import load_result


def _within_import_limit(upload: UploadedFile) -> None:
    limit = settings.SPECBOARD_MAX_IMPORT_BYTES
    if upload.size is not None and upload.size > limit:
        raise PayloadTooLarge({"file": [f"the file is larger than {limit} bytes"]})


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

    def validate(self, attrs: dict) -> dict:
        _within_import_limit(attrs["file"])
        return attrs


class ImportReportSerializer(serializers.Serializer):
    hardware = serializers.CharField(source="hardware.slug")
    baseline_run_name = serializers.CharField()
    runs_created = serializers.IntegerField()
    runs_skipped = serializers.IntegerField()
    config_keys = serializers.SerializerMethodField()

    def get_config_keys(self, report) -> list[str]:
        return [config.key for config in report.configs]


class UploadInputSerializer(serializers.Serializer):
    # Validated, it carries the file's typed `result` (the runner's BenchmarkResult).
    file = serializers.FileField(
        help_text="A runner result JSON file (python -m runner run ... --out RESULT.json)."
    )
    publish_name = serializers.BooleanField(
        default=False, help_text="Show your user name in the results' provenance (default: no)."
    )
    hardware = serializers.CharField(
        max_length=200, help_text="The GPU the result was measured on, e.g. 'RTX 4090'."
    )

    def validate(self, attrs: dict) -> dict:
        _within_import_limit(attrs["file"])
        try:
            data = parse_json_bytes(attrs["file"].read())
        except exceptions.ParseError as error:
            raise serializers.ValidationError({"file": [str(error.detail)]}) from None
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                {"file": ["a runner result file holds one JSON object"]}
            )
        try:
            result = load_result(data)
        except ResultError as error:
            raise serializers.ValidationError({"file": error.errors}) from None
        return attrs | {"result": result}


class UploadReportSerializer(serializers.Serializer):
    hardware = serializers.CharField()
    self_reported = serializers.BooleanField()
    runs = RunSerializer(many=True)
