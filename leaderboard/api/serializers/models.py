"""The model requests' serializers: a user's ask for a Hugging Face model, and its state."""

from __future__ import annotations

from rest_framework import serializers

from leaderboard.models import ModelFile, ModelRequest


class ModelRequestInputSerializer(serializers.Serializer):
    hf_repo = serializers.CharField(max_length=200)
    hf_file = serializers.CharField(max_length=255)
    revision = serializers.CharField(max_length=255, required=False, allow_blank=True)


class ModelRequestSerializer(serializers.ModelSerializer):
    model: serializers.SlugRelatedField[ModelFile] = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )

    class Meta:
        model = ModelRequest
        fields = [
            "id", "hf_repo", "hf_file", "revision", "state", "note", "model", "created_at",
            "decided_at",
        ]  # fmt: skip
        read_only_fields = fields
