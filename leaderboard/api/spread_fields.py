"""The run detail resource's read-only ``acceptance_spread`` field (``selectors.spread``).

How acceptance and tau spread over the run's measured requests, computed from its stored
request records: a histogram of per-request acceptance in bins of 10% and the smallest, 10th
percentile, median, 90th percentile and largest of acceptance and tau; null where no request
drafted (a baseline), never an error.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.api.energy_fields import WholeObjectField
from leaderboard.models import Run
from leaderboard.selectors.spread import acceptance_spread


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


@extend_schema_field(AcceptanceSpreadSerializer(allow_null=True))
class RunAcceptanceSpreadField(WholeObjectField):
    help = (
        "How acceptance and tau spread over the run's measured requests (a histogram in bins of "
        "10% and percentiles), from its request records; null where no request drafted."
    )

    def to_representation(self, run: Run) -> dict | None:
        return acceptance_spread(run=run)
