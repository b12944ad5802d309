"""The runs resource's serializers: a run, its per-request records, and its read-only figures.

A run's ``energy`` and ``roofline`` are read from its stored result (``selectors.evidence.energy``:
the roofline derived from the result's own evidence, never read as stored); a run's detail adds its
``acceptance_spread`` (``selectors.evidence.spread``): a histogram of per-request acceptance in
bins of 10% and the smallest, 10th percentile, median, 90th percentile and largest of acceptance
and tau, from its request records. Each is null where nothing was measured (CPU hosts, older
results, a baseline that drafted nothing) or the stored figures are malformed, never an error. A
config's energy and roofline, its best run's, reuse the figures' serializers here
(``serializers.configs``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.api.finished import FinishedRun
from leaderboard.api.serializers.serving import RunLatencyField
from leaderboard.models import Hardware, RequestRecord, Run

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


class SpreadSerializer(serializers.Serializer):
    min = serializers.FloatField()
    p10 = serializers.FloatField(help_text="10th percentile (inclusive method)")
    median = serializers.FloatField()
    p90 = serializers.FloatField(help_text="90th percentile (inclusive method)")
    max = serializers.FloatField()


class AcceptanceBinSerializer(serializers.Serializer):
    low = serializers.FloatField()
    high = serializers.FloatField(help_text="exclusive, but for the last bin (1.0 included)")
    count = serializers.IntegerField(help_text="requests whose acceptance falls in the bin")


class AcceptanceSpreadSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="measured requests")
    drafted = serializers.IntegerField(help_text="of them, requests that drafted tokens")
    without_drafts = serializers.IntegerField(help_text="requests without drafts: no acceptance")
    bins = AcceptanceBinSerializer(many=True)
    acceptance = SpreadSerializer(help_text="per request: accepted over drafted tokens")
    tau = SpreadSerializer(allow_null=True, help_text="per request: 1 + accepted per verify step")


class WholeObjectField(serializers.Field):
    """A read-only field computed from the whole object, null allowed."""

    help = ""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", self.help)
        super().__init__(source="*", read_only=True, allow_null=True, **kwargs)


@extend_schema_field(EnergySerializer(allow_null=True))
class RunEnergyField(WholeObjectField):
    help = ENERGY_HELP

    def to_representation(self, run: FinishedRun) -> dict | None:
        return run.figures["energy"]


@extend_schema_field(RooflineSerializer(allow_null=True))
class RunRooflineField(WholeObjectField):
    help = ROOFLINE_HELP

    def to_representation(self, run: FinishedRun) -> dict | None:
        return run.figures["roofline"]


@extend_schema_field(AcceptanceSpreadSerializer(allow_null=True))
class RunAcceptanceSpreadField(WholeObjectField):
    help = (
        "How acceptance and tau spread over the run's measured requests (a histogram in bins of "
        "10% and percentiles), from its request records; null where no request drafted."
    )

    def to_representation(self, run: FinishedRun) -> dict | None:
        return run.figures["acceptance_spread"]


class RunFlagsSerializer(serializers.Serializer):
    flags = serializers.ListField(
        child=serializers.CharField(),
        help_text="The board's badges in words: 'test weights', 'synthetic', 'self-reported', "
        "'degenerate', 'noisy', 'anecdotal'.",
    )
    noise_reasons = serializers.ListField(child=serializers.CharField())
    evidence_note = serializers.CharField(
        help_text="'anecdotal: from 1 verify step, 6 drafted tokens' where its speedup, "
        "acceptance and tau rest on too little; empty otherwise."
    )


@extend_schema_field(RunFlagsSerializer())
class RunFlagsField(WholeObjectField):
    help = "What the board's badges say of this run, and why (verdicts.noise, verdicts.evidence)."

    def to_representation(self, run: FinishedRun) -> dict:
        return run.figures["verdicts"]


class QualityAccuracySerializer(serializers.Serializer):
    tasks = serializers.IntegerField()
    correct = serializers.IntegerField()
    accuracy = serializers.FloatField()
    ci95 = serializers.ListField(child=serializers.FloatField(allow_null=True))


class QualityDifferenceSerializer(serializers.Serializer):
    value = serializers.FloatField()
    ci95 = serializers.ListField(child=serializers.FloatField(allow_null=True))
    points = serializers.FloatField()
    ci95_points = serializers.ListField(child=serializers.FloatField(allow_null=True))
    mcnemar_p = serializers.FloatField(allow_null=True)
    pairs = serializers.IntegerField()
    only_speculative_correct = serializers.IntegerField(allow_null=True)
    only_baseline_correct = serializers.IntegerField()
    verdict = serializers.CharField(allow_null=True)


class QualitySerializer(serializers.Serializer):
    accuracy = QualityAccuracySerializer()
    baseline = QualityAccuracySerializer(allow_null=True)
    difference = QualityDifferenceSerializer(allow_null=True)
    definition = serializers.CharField()


QUALITY_HELP = (
    "The quality protocol's figures (null for other protocols): this side's accuracy on the "
    "project's generated tasks with its Wilson 95% interval, and for a speculative run its "
    "paired baseline's accuracy on the same tasks and the difference (config minus baseline, "
    "with Newcombe's paired 95% interval, McNemar's exact p and the verdict: 'fewer correct', "
    "'more correct' or 'no change shown'); every task was scored again at the door."
)


@extend_schema_field(QualitySerializer(allow_null=True))
class RunQualityField(WholeObjectField):
    help = QUALITY_HELP

    def to_representation(self, run: FinishedRun) -> dict | None:
        return run.figures["quality"]


class QualityTaskSerializer(serializers.Serializer):
    index = serializers.IntegerField(allow_null=True)
    task_id = serializers.CharField()
    kind = serializers.CharField()
    expected = serializers.CharField()
    extracted = serializers.CharField()
    correct = serializers.BooleanField()


@extend_schema_field(QualityTaskSerializer(many=True, allow_null=True))
class RunQualityTasksField(WholeObjectField):
    help = (
        "The quality protocol's scored tasks of the run, in order: task id, kind, the expected "
        "answer (computed by the project), the answer extracted from the output (its first "
        "line, stripped, one trailing full stop dropped) and whether they match exactly; null "
        "for other protocols."
    )

    def to_representation(self, run: FinishedRun) -> list | None:
        return run.figures["quality_tasks"]


class RequestRecordSerializer(serializers.ModelSerializer):
    class Meta:
        model = RequestRecord
        # The record's columns, as the downloads give them; the rest of it (`details`) is not
        # part of the API's record.
        exclude = ["id", "run", "details"]
        read_only_fields = [
            f.name for f in RequestRecord._meta.fields if f.name not in ("id", "run", "details")
        ]


class RunSerializer(serializers.ModelSerializer):
    config_key = serializers.CharField(source="config.key", read_only=True)
    hardware: serializers.SlugRelatedField[Hardware] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    job_id = serializers.IntegerField(read_only=True, allow_null=True)
    tokens_per_second = serializers.FloatField(read_only=True, allow_null=True)
    energy = RunEnergyField()
    roofline = RunRooflineField()
    quality = RunQualityField()

    class Meta:
        model = Run
        exclude = ["config", "job", "raw_result", "import_fingerprint"]
        read_only_fields = [f.name for f in Run._meta.fields]

    def to_representation(self, run: Run) -> dict:
        data = super().to_representation(run)  # One request has no spread (Run.SPREAD_FIELDS).
        return data | dict.fromkeys(Run.SPREAD_FIELDS) if run.n < 2 else data


class RunDetailSerializer(RunSerializer):
    requests = RequestRecordSerializer(many=True, read_only=True)
    verdicts = RunFlagsField()
    acceptance_spread = RunAcceptanceSpreadField()
    quality_tasks = RunQualityTasksField()
    latency = RunLatencyField()


class RunQuerySerializer(serializers.Serializer):
    config = serializers.CharField(required=False, allow_blank=True, max_length=64)
    hardware = serializers.CharField(required=False, allow_blank=True, max_length=100)
