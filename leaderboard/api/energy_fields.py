"""The run and config resources' read-only ``energy`` and ``roofline`` fields.

A run's are read from its stored result (``selectors.energy``); a config's are its best run's,
fetched once for a whole page of configs (``ConfigListSerializer``) or, for a config read alone,
by the field itself. Each is null where nothing was measured (CPU hosts, older results) or the
stored figures are malformed, never an error.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.models import Config, Run
from leaderboard.selectors import energy as selectors_energy

ENERGY_HELP = (
    "NVML energy over generated tokens and over accepted draft tokens (null without drafting); "
    "null where none was measured (CPU hosts, older results)."
)
ROOFLINE_HELP = (
    "Decode tok/s against the GPU's memory-bandwidth ceiling (peak bandwidth over the weight "
    "bytes one token reads) and a baseline's flag: above_ceiling (impossible, a measurement "
    "error) or far_below (likely a CPU fallback); null off CUDA."
)


class EnergySerializer(serializers.Serializer):
    joules_per_token = serializers.FloatField(allow_null=True)
    joules_per_accepted_token = serializers.FloatField(allow_null=True)


class RooflineSerializer(serializers.Serializer):
    peak_bandwidth_bytes_per_second = serializers.IntegerField()
    bytes_per_token = serializers.IntegerField()
    ceiling_tokens_per_second = serializers.FloatField()
    fraction = serializers.FloatField(allow_null=True)
    flag = serializers.ChoiceField(choices=["above_ceiling", "far_below"], allow_null=True)


class WholeObjectField(serializers.Field):
    """A read-only field computed from the whole object, null allowed."""

    help = ""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", self.help)
        super().__init__(source="*", read_only=True, allow_null=True, **kwargs)


@extend_schema_field(EnergySerializer(allow_null=True))
class RunEnergyField(WholeObjectField):
    help = ENERGY_HELP

    def to_representation(self, run: Run) -> dict | None:
        return selectors_energy.energy_of(run.raw_result)


@extend_schema_field(RooflineSerializer(allow_null=True))
class RunRooflineField(WholeObjectField):
    help = ROOFLINE_HELP

    def to_representation(self, run: Run) -> dict | None:
        return selectors_energy.roofline_of(run.raw_result)


def _config_figures(config: Config) -> dict:
    # A config read alone (the detail resource) fetches its own best run's figures.
    if not hasattr(config, "energy_figures"):
        config.energy_figures = selectors_energy.best_run_figures(configs=[config])[config.pk]
    return config.energy_figures


@extend_schema_field(EnergySerializer(allow_null=True))
class ConfigEnergyField(WholeObjectField):
    help = f"The best run's: {ENERGY_HELP}"

    def to_representation(self, config: Config) -> dict | None:
        return _config_figures(config)["energy"]


@extend_schema_field(RooflineSerializer(allow_null=True))
class ConfigRooflineField(WholeObjectField):
    help = f"The best run's: {ROOFLINE_HELP}"

    def to_representation(self, config: Config) -> dict | None:
        return _config_figures(config)["roofline"]


class ConfigListSerializer(serializers.ListSerializer):
    """Configs read together: their best runs' energy and roofline are fetched once for all."""

    def to_representation(self, data: Any) -> list:
        configs = list(data.all() if hasattr(data, "all") else data)
        figures = selectors_energy.best_run_figures(configs=configs)
        for config in configs:
            config.energy_figures = figures[config.pk]
        return super().to_representation(configs)
