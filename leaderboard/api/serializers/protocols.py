"""The protocols resource's serializers: the concurrency and categories figures, read-only.

`/api/v1/concurrency` lists the lines of the /concurrency/ page (`ConcurrencySerializer`, with
its query); a config's detail (`serializers.configs`) shows its best row's levels
(`ConcurrencyLevelSerializer`) or categories (`CategoryFigureSerializer`). Every figure comes
from `leaderboard.selectors.evidence.protocols` and `selectors.evidence.categories`, which read
stored results defensively: null, never 0, where a result lacks it.
"""

from __future__ import annotations

from rest_framework import serializers

from leaderboard.api.serializers.serving import (
    LatencySerializer,
    ParetoSerializer,
    TpotObjectiveQueryField,
)


class ConcurrencyLevelSerializer(serializers.Serializer):
    """One concurrency level of a result, with the speedup derived from the paired baseline's."""

    concurrency = serializers.IntegerField()
    n = serializers.IntegerField(allow_null=True, help_text="Rounds measured at this level.")
    aggregate = serializers.FloatField(
        allow_null=True, help_text="Aggregate tok/s: a round's generated tokens over its wall time."
    )
    ci95_low = serializers.FloatField(allow_null=True)
    ci95_high = serializers.FloatField(allow_null=True)
    decode = serializers.FloatField(allow_null=True, help_text="Per-request decode tok/s.")
    ttft_ms = serializers.FloatField(allow_null=True)
    acceptance = serializers.FloatField(
        allow_null=True,
        help_text="Draft tokens accepted over drafted, pooled over the level's measured requests "
        "(derived from the stored records); null without drafting or records.",
    )
    acceptance_ci95_low = serializers.FloatField(allow_null=True)
    acceptance_ci95_high = serializers.FloatField(
        allow_null=True,
        help_text="Acceptance's Wilson 95% interval over the level's drafted tokens: within "
        "[0, 1] and around the figure; null without drafting.",
    )
    tau = serializers.FloatField(
        allow_null=True,
        help_text="Tokens per verify step under load: 1 + accepted drafts per verify step, pooled "
        "over the level's measured requests (a wave's verify steps are exact, one request's "
        "share of them is not, so a request has no tau of its own above level 1).",
    )
    tau_ci95_low = serializers.FloatField(allow_null=True)
    tau_ci95_high = serializers.FloatField(
        allow_null=True,
        help_text="Tau's 95% interval: the ratio estimator's over the level's rounds, centred "
        "on the pooled tau; null for fewer than two rounds.",
    )
    draft_tokens = serializers.IntegerField(
        allow_null=True, help_text="Draft tokens proposed at this level (measured requests)."
    )
    draft_accepted = serializers.IntegerField(allow_null=True)
    verify_steps = serializers.IntegerField(allow_null=True)
    drafting_rounds = serializers.IntegerField(
        allow_null=True, help_text="Rounds the acceptance and tau intervals are over."
    )
    baseline_aggregate = serializers.FloatField(allow_null=True)
    speedup = serializers.FloatField(
        allow_null=True, help_text="Aggregate over the paired baseline's at the same level."
    )
    speedup_ci95_low = serializers.FloatField(allow_null=True)
    speedup_ci95_high = serializers.FloatField(
        allow_null=True, help_text="The speedup's 95% interval over the two sides' rounds."
    )
    verdict = serializers.CharField(
        help_text="'faster', 'slower' (Welch's test on the rounds at 5%), 'not established', or "
        "'' without a baseline at this level."
    )
    p = serializers.FloatField(allow_null=True, help_text="Welch's p-value against the baseline.")
    latency = LatencySerializer(
        allow_null=True,
        default=None,
        help_text="The level's latency percentiles and goodput, from its measured requests.",
    )


class OutputLengthFigureSerializer(serializers.Serializer):
    """One output length of a result (the output-length protocol), with the speedup derived from
    the paired baseline's at the same length (``verdicts.output_length``)."""

    output_tokens = serializers.IntegerField(help_text="Tokens asked for at this length.")
    generated_tokens = serializers.FloatField(
        allow_null=True,
        help_text="Mean tokens the length's requests generated (the runner forces the length).",
    )
    requests = serializers.IntegerField(allow_null=True, help_text="Measured requests.")
    decode = serializers.FloatField(allow_null=True, help_text="Mean decode tok/s per request.")
    baseline_decode = serializers.FloatField(allow_null=True)
    baseline_requests = serializers.IntegerField(allow_null=True)
    speedup = serializers.FloatField(
        allow_null=True, help_text="Mean decode tok/s over the paired baseline's at this length."
    )
    ci95_low = serializers.FloatField(allow_null=True)
    ci95_high = serializers.FloatField(
        allow_null=True,
        help_text="The speedup's 95% interval: delta method on its log, Welch's degrees of freedom.",
    )
    verdict = serializers.CharField(
        help_text="'faster' or 'slower' when the whole interval is on one side of 1, else "
        "'not established'."
    )


class ConcurrencyLineSerializer(serializers.Serializer):
    config_key = serializers.CharField(source="key")
    label = serializers.CharField()  # type: ignore[assignment]  # DRF moves declared fields off the class; stubs see Field.label
    short_label = serializers.CharField()
    baseline = serializers.BooleanField(help_text="Whether this line is a baseline config.")
    run_id = serializers.IntegerField(allow_null=True)
    flags = serializers.ListField(child=serializers.CharField())
    crossover = serializers.IntegerField(
        allow_null=True,
        help_text="The point estimate: the lowest level with a speedup below 1; null if none.",
    )
    crossover_text = serializers.CharField(
        help_text="The crossover with its uncertainty: 'between 2 and 8', 'at or below 1', "
        "'not within 1–16' or 'not established' (Welch's test per level on the rounds)."
    )
    rows = ConcurrencyLevelSerializer(many=True)


class ConcurrencySerializer(serializers.Serializer):
    target = serializers.CharField()
    hardware = serializers.CharField()
    levels = serializers.ListField(child=serializers.IntegerField())
    lines = ConcurrencyLineSerializer(many=True)
    tpot_ms_objective = serializers.FloatField(
        help_text="The goodput objective the levels' latency was judged at (TPOT ms)."
    )
    latency_definitions = serializers.DictField(child=serializers.CharField())
    pareto = ParetoSerializer(
        help_text="Throughput per GPU against tok/s per user, a curve per config (the trade-off)."
    )


class ConcurrencyQuerySerializer(serializers.Serializer):
    target = serializers.CharField(required=False, allow_blank=True, max_length=200)
    hardware = serializers.CharField(required=False, allow_blank=True, max_length=100)
    tpot_ms = TpotObjectiveQueryField()


class CategoryFigureSerializer(serializers.Serializer):
    """One task category of a result, with the speedup derived from the paired baseline's."""

    category = serializers.CharField()
    n = serializers.IntegerField(allow_null=True)
    decode = serializers.FloatField(allow_null=True)
    ci95_low = serializers.FloatField(allow_null=True)
    ci95_high = serializers.FloatField(allow_null=True)
    acceptance = serializers.FloatField(allow_null=True)
    tau = serializers.FloatField(allow_null=True)
    baseline_decode = serializers.FloatField(allow_null=True)
    speedup = serializers.FloatField(allow_null=True)
    prompts = serializers.IntegerField(allow_null=True, help_text="Distinct prompts measured.")
    anecdotal = serializers.BooleanField(help_text="Fewer than three prompts: an anecdote.")
    thin_drafting = serializers.BooleanField(
        default=False,
        help_text="Fewer drafted tokens or verify steps than the site's evidence threshold: "
        "its acceptance, tau and speedup are anecdotes (no verdict, no colour).",
    )
    acceptance_ci95_low = serializers.FloatField(allow_null=True)
    acceptance_ci95_high = serializers.FloatField(
        allow_null=True,
        help_text="Acceptance's Wilson 95% interval over the category's drafted tokens: within "
        "[0, 1] and around the figure.",
    )
    speedup_ci95_low = serializers.FloatField(allow_null=True)
    speedup_ci95_high = serializers.FloatField(
        allow_null=True,
        help_text="The speedup's 95% interval (the delta method on the ratio of the category's "
        "mean decode tok/s over its prompts to the baseline's).",
    )
