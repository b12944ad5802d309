"""The leaderboard rows' serializers: a row with its verdicts (ranking, rank, tie labels, the
config's and the speedup's intervals), each number's definition and evidence, and the query
that filters the rows. A row comes with its evidence and definitions (`api.finished.entries`)."""

from __future__ import annotations

from rest_framework import serializers

from leaderboard import selectors, verdicts
from leaderboard.api.finished import FinishedEntry
from leaderboard.models import Hardware, LeaderboardEntry


class DepthFigureSerializer(serializers.Serializer):
    """One depth of a depth protocol: decode tok/s mean, n, 95% interval, speedup at that depth."""

    input_tokens = serializers.IntegerField()
    n = serializers.IntegerField(allow_null=True)
    mean = serializers.FloatField(allow_null=True)
    ci95_low = serializers.FloatField(allow_null=True)
    ci95_high = serializers.FloatField(allow_null=True)
    speedup = serializers.FloatField(allow_null=True)


def _evidence_field(key: str, help_text: str, field=serializers.IntegerField) -> serializers.Field:
    return field(source=f"evidence.{key}", read_only=True, allow_null=True, help_text=help_text)


class LeaderboardEntrySerializer(serializers.ModelSerializer):
    config_key = serializers.CharField(source="config.key", read_only=True)
    label = serializers.CharField(  # type: ignore[assignment]  # declared fields leave the class; stubs see Field.label
        source="config.label", read_only=True
    )
    target_name = serializers.CharField(source="config.target_name", read_only=True)
    spec_label = serializers.CharField(source="config.spec_label", read_only=True)
    protocol = serializers.CharField(source="config.protocol", read_only=True)
    n_max = serializers.IntegerField(source="config.n_max", read_only=True, allow_null=True)
    hardware: serializers.SlugRelatedField[Hardware] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
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

    rank = serializers.IntegerField(
        read_only=True,
        allow_null=True,
        help_text="Competition rank by tok/s in its ranking (ranking_label: the same workload, "
        "tok/s definition, GPU and release); null for baselines and kept-off rows.",
    )
    like_leader = serializers.BooleanField(
        read_only=True,
        allow_null=True,
        help_text="Welch's test on the configs' samples cannot tell it from its ranking's leader "
        "at 5% (true), can (false), cannot be asked (null: no spread, or the leader itself).",
    )
    like_above = serializers.BooleanField(
        read_only=True, allow_null=True, help_text="The same test against the row ranked above it."
    )
    config_ci95_low = serializers.FloatField(read_only=True, allow_null=True)
    config_ci95_high = serializers.FloatField(
        read_only=True,
        allow_null=True,
        help_text="The 95% interval of config_mean, the config's estimate that ties are decided "
        "on: a random-effects estimate over its batch means with several batches, else its one "
        "batch's requests (rounds for concurrency): interval_basis. The interval of "
        "tokens_per_second (the best batch's mean) is ci95_low/high.",
    )
    speedup_ci95_high = serializers.FloatField(
        read_only=True,
        allow_null=True,
        help_text="The 95% interval of the speedup shown (its best batch over the baseline batch "
        "it divides by), over speedup_basis ('requests' or 'rounds'); null for a geometric mean "
        "over depths or lengths.",
    )
    anecdotal = serializers.BooleanField(
        read_only=True,
        help_text="Its speedup, acceptance and tau rest on fewer verify steps or drafted tokens "
        "than the site's threshold (evidence_threshold): shown, never crowned.",
    )
    evidence_draft_tokens = serializers.IntegerField(
        source="draft_tokens", read_only=True, help_text="The best batch's drafted tokens."
    )
    evidence_verify_steps = serializers.IntegerField(
        source="verify_steps", read_only=True, help_text="The best batch's verify steps."
    )
    evidence_note = serializers.CharField(
        read_only=True, help_text="'anecdotal: from 1 verify step, 6 drafted tokens'; empty if not."
    )
    evidence_threshold = serializers.SerializerMethodField(
        help_text="The one evidence threshold, in words."
    )

    fidelity = serializers.CharField(
        read_only=True,
        help_text="The fidelity verdict: the worst over the row's graded batches against the "
        "baseline measured with them ('identical', 'near ties only', 'mismatch', "
        "'unclassified'); empty where none was graded (see lossless).",
    )

    class Meta:
        model = LeaderboardEntry
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
            "ranking_key", "ranking_label", "workload_label", "rank", "like_leader", "like_above",
            "config_mean", "config_n", "config_ci95_low", "config_ci95_high", "interval_basis",
            "speedup_ci95_low", "speedup_ci95_high", "speedup_basis", "noisy", "baseline_noisy", "memorised",
            "prompts_unknown", "prompt_set", "crossover", "fidelity", "anecdotal", "evidence_draft_tokens", "evidence_verify_steps",
            "evidence_note", "evidence_threshold",
        ]  # fmt: skip
        read_only_fields = fields

    def get_evidence_threshold(self, entry: LeaderboardEntry) -> str:
        return verdicts.evidence.THRESHOLD_TEXT

    def get_ci95_scope(self, entry: FinishedEntry) -> str:
        if entry.evidence["depths"]:
            return "across depths"
        return "requests" if entry.n >= 2 and entry.ci95_low is not None else "none"


class LeaderboardQuerySerializer(serializers.Serializer):
    """The leaderboard's filters. By default the rows are the main ranking, as on the page;
    naming a `source` or `include_retired=true` widens them to every row the filters match."""

    target = serializers.CharField(required=False, allow_blank=True, max_length=200)
    hardware = serializers.CharField(required=False, allow_blank=True, max_length=100)
    spec_type = serializers.CharField(required=False, allow_blank=True, max_length=60)
    protocol = serializers.ChoiceField(
        choices=selectors.PROTOCOLS, required=False, allow_blank=True
    )
    source = serializers.ChoiceField(  # type: ignore[assignment]  # declared fields leave the class; stubs see Field.source
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
    search = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text="The page's search box: config label, target, GPU or release containing it, "
        "or a config key starting with it.",
    )

    def validate(self, attrs: dict) -> dict:
        # The page's default is the main ranking (its "all results" toggle widens it); a query
        # that names a source or asks for retired rows asks for more than the ranking.
        widened = "source" in attrs or attrs["include_retired"]
        return attrs | {"source": attrs.get("source", "all"), "ranked_only": not widened}
