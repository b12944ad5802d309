"""The configs resource's serializers: a config in the list, and its detail with protocol figures.

A config's ``energy`` and ``roofline`` are its best run's (``selectors.best_run_figures``), read
once for a whole page of configs by the view (``api.finished.configs``); null where nothing was
measured. The detail adds its best row's per-level
concurrency figures and crossover, its per-category figures, or its per-output-length figures
(``ConfigDetailSerializer``, from ``selectors.config_protocol_figures``): null for the other
protocols; and, whatever the protocol, its best run's latency percentiles and goodput per point
(``latency``, ``selectors.answers.serving.run_latency``).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.api.finished import FinishedConfig
from leaderboard.api.serializers.protocols import (
    CategoryFigureSerializer,
    ConcurrencyLevelSerializer,
    OutputLengthFigureSerializer,
)
from leaderboard.api.serializers.runs import (
    ENERGY_HELP,
    QUALITY_HELP,
    ROOFLINE_HELP,
    EnergySerializer,
    QualitySerializer,
    RooflineSerializer,
    WholeObjectField,
)
from leaderboard.api.serializers.serving import RunLatencySerializer
from leaderboard.models import Config, ModelFile


@extend_schema_field(EnergySerializer(allow_null=True))
class ConfigEnergyField(WholeObjectField):
    help = f"The best run's: {ENERGY_HELP}"

    def to_representation(self, config: FinishedConfig) -> dict | None:
        return config.energy_figures["energy"]


@extend_schema_field(RooflineSerializer(allow_null=True))
class ConfigRooflineField(WholeObjectField):
    help = f"The best run's: {ROOFLINE_HELP}"

    def to_representation(self, config: FinishedConfig) -> dict | None:
        return config.energy_figures["roofline"]


@extend_schema_field(QualitySerializer(allow_null=True))
class ConfigQualityField(WholeObjectField):
    help = f"The best run's: {QUALITY_HELP}"

    def to_representation(self, config: FinishedConfig) -> dict | None:
        return config.energy_figures["quality"]


class ConfigSerializer(serializers.ModelSerializer):
    target: serializers.SlugRelatedField[ModelFile] = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )
    draft: serializers.SlugRelatedField[ModelFile] = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )
    baseline_key: serializers.SlugRelatedField[Config] = serializers.SlugRelatedField(
        source="baseline", slug_field="key", read_only=True, allow_null=True
    )
    energy = ConfigEnergyField()
    roofline = ConfigRooflineField()
    quality = ConfigQualityField()

    class Meta:
        model = Config
        fields = [
            "key", "label", "target_name", "target", "draft", "spec_label", "protocol", "n_max",
            "ctx_size", "synthetic", "self_reported", "baseline_key", "canonical", "created_at",
            "energy", "roofline", "quality",
        ]  # fmt: skip
        read_only_fields = fields


class ConfigDetailSerializer(ConfigSerializer):
    """A config with its best row's concurrency levels and crossover, or its categories (null
    for other protocols); its energy and roofline are ConfigSerializer's."""

    concurrency_levels = serializers.SerializerMethodField()
    crossover_concurrency = serializers.SerializerMethodField()
    categories = serializers.SerializerMethodField()
    output_lengths = serializers.SerializerMethodField()
    latency = serializers.SerializerMethodField()

    class Meta(ConfigSerializer.Meta):
        fields = [
            *ConfigSerializer.Meta.fields,
            "concurrency_levels",
            "crossover_concurrency",
            "categories",
            "output_lengths",
            "latency",
        ]
        read_only_fields = fields

    @extend_schema_field(ConcurrencyLevelSerializer(many=True, allow_null=True))
    def get_concurrency_levels(self, config: FinishedConfig) -> list | None:
        view = config.protocol_figures["concurrency"]
        return ConcurrencyLevelSerializer(view["line"]["rows"], many=True).data if view else None  # type: ignore[return-value]  # many=True makes a ListSerializer; stubs type .data as ReturnDict

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_crossover_concurrency(self, config: FinishedConfig) -> int | None:
        view = config.protocol_figures["concurrency"]
        return view["crossover"] if view else None

    @extend_schema_field(CategoryFigureSerializer(many=True, allow_null=True))
    def get_categories(self, config: FinishedConfig) -> list | None:
        view = config.protocol_figures["categories"]
        return CategoryFigureSerializer(view["rows"], many=True).data if view else None  # type: ignore[return-value]  # many=True makes a ListSerializer; stubs type .data as ReturnDict

    @extend_schema_field(OutputLengthFigureSerializer(many=True, allow_null=True))
    def get_output_lengths(self, config: FinishedConfig) -> list | None:
        view = config.protocol_figures["output_length"]
        return OutputLengthFigureSerializer(view["rows"], many=True).data if view else None  # type: ignore[return-value]  # many=True makes a ListSerializer; stubs type .data as ReturnDict

    @extend_schema_field(RunLatencySerializer(allow_null=True))
    def get_latency(self, config: FinishedConfig) -> dict | None:
        """The best run's latency percentiles and goodput per point
        (`selectors.answers.serving`)."""
        return config.latency
