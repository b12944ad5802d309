"""The drafts resource's serializers: which draft for a target, one group per ranking.

Each group is one of the model page's tables (GPU kind, workload, tok/s definition and engine
release), each draft in it by its best speedup over the paired baseline with that speedup's 95%
interval and where it stands against the fastest and against no drafting
(`selectors.draft_advice`).
"""

from __future__ import annotations

from rest_framework import serializers


class DraftsQuerySerializer(serializers.Serializer):
    target = serializers.CharField(max_length=200, help_text="The target model's name.")


class DraftSerializer(serializers.Serializer):
    spec_label = serializers.CharField()
    draft = serializers.CharField(help_text="The draft file's name; empty without one.")
    config_key = serializers.CharField(source="entry.config.key")
    config_label = serializers.CharField(source="entry.config.label")
    speedup = serializers.FloatField(source="entry.speedup")
    speedup_ci95_low = serializers.SerializerMethodField()
    speedup_ci95_high = serializers.SerializerMethodField()
    acceptance_rate = serializers.FloatField(source="entry.acceptance_rate", allow_null=True)
    tau = serializers.FloatField(source="entry.tau", allow_null=True)
    tokens_per_second = serializers.FloatField(source="entry.tokens_per_second")
    noisy = serializers.BooleanField(
        source="entry.noisy", help_text="Its best batch is noisy (`verdicts.noise`)."
    )
    baseline_noisy = serializers.BooleanField(
        source="entry.baseline_noisy",
        help_text="The baseline batch its speedup divides by is noisy: the speedup rests on it.",
    )
    configs = serializers.IntegerField(help_text="Configs of this draft in the workload.")
    leader = serializers.BooleanField(
        help_text="The fastest draft of its table that is neither noisy, nor on a noisy baseline, "
        "nor anecdotal, where one is (the least slow where every draft is slower than no "
        "drafting: see against_baseline)."
    )
    tied = serializers.BooleanField(
        help_text="Indistinguishable from the fastest: the difference of the two log speedups "
        "is within its noise at 5%."
    )
    tie_unknown = serializers.BooleanField(
        help_text="Not tested against the fastest: it or the fastest has no interval."
    )
    anecdotal = serializers.BooleanField(
        help_text="Its speedup rests on fewer verify steps or drafted tokens than the site's "
        "threshold: shown, never the leader, set against nothing."
    )
    evidence_note = serializers.CharField(source="entry.evidence_note")
    against_baseline = serializers.ChoiceField(
        choices=["faster", "slower", "unclear", "below 1, no interval"],
        allow_null=True,
        help_text="Where its speedup interval lies against 1 (no drafting).",
    )

    def get_speedup_ci95_low(self, draft: dict) -> float | None:
        return draft["interval"][0] if draft["interval"] else None

    def get_speedup_ci95_high(self, draft: dict) -> float | None:
        return draft["interval"][1] if draft["interval"] else None


class DraftGroupSerializer(serializers.Serializer):
    hardware = serializers.CharField(source="hardware.slug")
    gpu_name = serializers.CharField(source="hardware.gpu_name")
    definition = serializers.CharField()
    workload = serializers.CharField(help_text="The protocol and its parameters, in words.")
    engine_release = serializers.CharField()
    ranking_label = serializers.CharField(
        help_text="The ranking in words (workload, tok/s definition, GPU, release): the model "
        "page's heading of this table."
    )
    none_pays = serializers.BooleanField(help_text="Every draft's speedup is below 1.")
    drafts = DraftSerializer(many=True)


class DraftsSerializer(serializers.Serializer):
    target = serializers.CharField()
    groups = DraftGroupSerializer(many=True)
