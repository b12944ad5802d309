"""The compare resource's serializers: the query (two to four config keys) and the comparison.

How many keys and which exist are `selectors.answers.compare`'s rules, shared with the compare
page; a refusal is answered by the API's exception handler (`leaderboard.api.errors`).
"""

from __future__ import annotations

from rest_framework import serializers

from leaderboard.api.serializers.board import LeaderboardEntrySerializer
from leaderboard.api.serializers.configs import ConfigSerializer


class CompareQuerySerializer(serializers.Serializer):
    keys = serializers.CharField(
        max_length=200,
        help_text="Two to four config keys, comma-separated; the first is the reference.",
    )


class DifferenceSerializer(serializers.Serializer):
    config_key = serializers.CharField()
    relative_to = serializers.CharField()
    difference = serializers.FloatField(
        allow_null=True, help_text="This config's mean tok/s minus the reference's."
    )
    ci95_low = serializers.FloatField(allow_null=True)
    ci95_high = serializers.FloatField(allow_null=True)
    degrees_of_freedom = serializers.FloatField(allow_null=True)
    note = serializers.CharField()


class CompareColumnSerializer(serializers.Serializer):
    config = ConfigSerializer()
    entry = LeaderboardEntrySerializer(allow_null=True)


class CompareSerializer(serializers.Serializer):
    configs = CompareColumnSerializer(many=True)
    differences = DifferenceSerializer(many=True)
