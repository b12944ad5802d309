"""The run and config resources' read-only ``energy`` and ``roofline`` fields.

A run's are read from its stored result (``selectors.energy``: the roofline derived from the
result's own evidence, never read as stored); a config's are its best run's,
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
    "NVML energy over generated tokens: each request's counter includes its prefill and any idle "
    "time within it, and a concurrent wave's energy is shared out by tokens (an allocation). "
    "joules_per_accepted_token is always null: there is no separate energy of an accepted "
    "draft token. Null where none was measured (CPU hosts, older results)."
)
ROOFLINE_HELP = (
    "The rate against the GPU's memory-bandwidth ceiling for the bytes one step reads, derived "
    "from the result's own evidence: bandwidth x streams x tokens per step over the target's "
    "weights, the K/V cache at the requests' mean context and the draft's bytes (a null term is "
    "unknown, left out); one stream: mean decode tok/s; a concurrency level: aggregate tok/s "
    "(levels, the lowest on top). Flags: above_ceiling (impossible, a measurement error) or "
    "far_below (a one-stream baseline, likely a CPU fallback); null off CUDA."
)


class EnergySerializer(serializers.Serializer):
    joules_per_token = serializers.FloatField(allow_null=True)
    joules_per_accepted_token = serializers.FloatField(allow_null=True, help_text="Always null.")


class RooflineLevelSerializer(serializers.Serializer):
    concurrency = serializers.IntegerField()
    ceiling_tokens_per_second = serializers.FloatField()
    fraction = serializers.FloatField(allow_null=True)
    flag = serializers.ChoiceField(choices=["above_ceiling", "far_below"], allow_null=True)
    bytes_per_step = serializers.IntegerField()
    kv_bytes_per_step = serializers.IntegerField(allow_null=True)
    draft_bytes_per_step = serializers.IntegerField(allow_null=True)
    tokens_per_step = serializers.FloatField()
    streams = serializers.IntegerField()


class RooflineSerializer(serializers.Serializer):
    peak_bandwidth_bytes_per_second = serializers.IntegerField()
    bytes_per_token = serializers.IntegerField(help_text="bytes_per_step over the tokens it yields")
    ceiling_tokens_per_second = serializers.FloatField()
    fraction = serializers.FloatField(allow_null=True)
    flag = serializers.ChoiceField(choices=["above_ceiling", "far_below"], allow_null=True)
    target_weight_bytes = serializers.IntegerField()
    kv_bytes_per_step = serializers.IntegerField(allow_null=True)
    draft_bytes_per_step = serializers.IntegerField(allow_null=True)
    bytes_per_step = serializers.IntegerField()
    tokens_per_step = serializers.FloatField()
    streams = serializers.IntegerField()
    context_tokens = serializers.FloatField(allow_null=True)
    rate = serializers.ChoiceField(choices=["decode", "aggregate"])
    concurrency = serializers.IntegerField(allow_null=True)
    levels = RooflineLevelSerializer(many=True, allow_null=True)


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
