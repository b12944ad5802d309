"""Serializers of what a serving user weighs (read-only): latency percentiles and goodput, and the
throughput-per-GPU against tok/s-per-user trade-off, as `leaderboard.selectors.answers.serving`
derives them from the stored requests. Each figure's definition travels with it (`definitions`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.api.finished import FinishedRun
from leaderboard.selectors.answers.serving import MAX_TPOT_OBJECTIVE_MS


class PercentilesSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="Samples: requests, or chunk gaps for ITL.")
    mean = serializers.FloatField(allow_null=True)
    p50 = serializers.FloatField(allow_null=True)
    p90 = serializers.FloatField(allow_null=True)
    p99 = serializers.FloatField(
        allow_null=True, help_text="Linear between the closest ranks (numpy's default)."
    )
    max = serializers.FloatField(allow_null=True)
    p50_ci95_low = serializers.FloatField(allow_null=True, default=None)
    p50_ci95_high = serializers.FloatField(
        allow_null=True, default=None, help_text="The median's distribution-free 95% interval."
    )
    p99_ci95_low = serializers.FloatField(allow_null=True, default=None)
    p99_ci95_high = serializers.FloatField(
        allow_null=True,
        default=None,
        help_text="p99's distribution-free 95% interval; null below about 370 samples.",
    )


class GoodputSerializer(serializers.Serializer):
    tpot_ms_objective = serializers.FloatField(help_text="The objective: TPOT at most this, ms.")
    requests = serializers.IntegerField(help_text="Requests with a TPOT (two tokens or more).")
    met = serializers.IntegerField(help_text="Requests meeting the objective.")
    share = serializers.FloatField(allow_null=True, help_text="met / requests.")
    ci95_low = serializers.FloatField(allow_null=True)
    ci95_high = serializers.FloatField(
        allow_null=True, help_text="The share's Wilson 95% interval."
    )


class LatencySerializer(serializers.Serializer):
    """Latency of some requests in ms (`selectors.answers.serving.DEFINITIONS`)."""

    ttft_ms = PercentilesSerializer(help_text="Time to first token, per request.")
    tpot_ms = PercentilesSerializer(
        help_text="Time per output token: (e2e - TTFT) / (output tokens - 1), per request."
    )
    itl_ms = PercentilesSerializer(
        help_text="Inter-token latency: gaps between successive streamed content chunks (many "
        "near 0 with speculative decoding's bursts); n 0 for a run that was not streamed."
    )
    e2e_ms = PercentilesSerializer(help_text="End-to-end latency: client wall time, per request.")
    goodput = GoodputSerializer()


class ParetoPointSerializer(serializers.Serializer):
    concurrency = serializers.IntegerField()
    per_user = serializers.FloatField(help_text="tok/s per user: 1000 / the median TPOT (ms).")
    per_gpu = serializers.FloatField(help_text="Aggregate tok/s over the hardware's GPU count.")
    per_gpu_ci95_low = serializers.FloatField(allow_null=True)
    per_gpu_ci95_high = serializers.FloatField(allow_null=True)
    tpot_p50_ms = serializers.FloatField()
    tpot_p50_ci95_low = serializers.FloatField(allow_null=True)
    tpot_p50_ci95_high = serializers.FloatField(
        allow_null=True, help_text="The median TPOT's distribution-free 95% interval."
    )
    tpot_n = serializers.IntegerField(help_text="Requests behind the median TPOT.")
    rounds = serializers.IntegerField(allow_null=True, help_text="Rounds behind the aggregate.")
    frontier = serializers.BooleanField(help_text="Whether the point is on the Pareto frontier.")


class ParetoCurveSerializer(serializers.Serializer):
    config_key = serializers.CharField(source="key")
    label = serializers.CharField()  # type: ignore[assignment]  # DRF moves declared fields off the class; stubs see Field.label
    baseline = serializers.BooleanField()
    points = ParetoPointSerializer(many=True)


class ParetoFrontierSerializer(serializers.Serializer):
    config_key = serializers.CharField(source="key")
    label = serializers.CharField()  # type: ignore[assignment]  # DRF moves declared fields off the class; stubs see Field.label
    concurrency = serializers.IntegerField()
    per_user = serializers.FloatField()
    per_gpu = serializers.FloatField()


class ParetoSerializer(serializers.Serializer):
    """Throughput per GPU against tok/s per user over the concurrency levels, per config."""

    gpu_count = serializers.IntegerField()
    curves = ParetoCurveSerializer(many=True)
    frontier = ParetoFrontierSerializer(
        many=True, help_text="The Pareto frontier of the point estimates (no test)."
    )
    definitions = serializers.DictField(child=serializers.CharField())


class TpotObjectiveQueryField(serializers.FloatField):
    """?tpot_ms=: the goodput objective in ms, a finite number above 0."""

    def __init__(self, **kwargs) -> None:
        super().__init__(
            required=False,
            min_value=1e-6,
            max_value=MAX_TPOT_OBJECTIVE_MS,
            help_text="The goodput objective: TPOT at most this many ms (default 50).",
            **kwargs,
        )


class PointLatencySerializer(serializers.Serializer):
    label = serializers.CharField(  # type: ignore[assignment]  # declared fields leave the class; stubs see Field.label
        help_text="The point: a level, a category, a depth, or all."
    )
    latency = LatencySerializer()


class RunLatencySerializer(serializers.Serializer):
    rows = PointLatencySerializer(many=True)
    objective_ms = serializers.FloatField(help_text="The goodput objective: TPOT at most, ms.")
    streamed = serializers.BooleanField(help_text="Whether inter-token latency was measured.")
    definitions = serializers.DictField(child=serializers.CharField())


@extend_schema_field(RunLatencySerializer(allow_null=True))
class RunLatencyField(serializers.Field):
    """A run's latency percentiles and goodput per point, from its stored requests."""

    def __init__(self, **kwargs) -> None:
        super().__init__(
            source="*",
            read_only=True,
            allow_null=True,
            help_text="Latency percentiles (TTFT, TPOT, ITL, end-to-end) and goodput at the "
            "default objective per point, derived from the run's measured requests.",
            **kwargs,
        )

    def to_representation(self, run: FinishedRun) -> dict | None:
        return run.figures["latency"]
