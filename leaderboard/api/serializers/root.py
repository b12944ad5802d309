"""The API root's serializers: each collection's link and what it holds, the schema and the docs."""

from __future__ import annotations

from rest_framework import serializers


class ResourceSerializer(serializers.Serializer):
    name = serializers.CharField()
    url = serializers.URLField()
    description = serializers.CharField()


class ApiRootSerializer(serializers.Serializer):
    version = serializers.CharField()
    resources = ResourceSerializer(many=True)
    schema = serializers.URLField(help_text="The OpenAPI schema generated from the code.")
    docs = serializers.URLField(help_text="The schema rendered for reading.")
    guide = serializers.CharField(help_text="Where the API is described in words.")
