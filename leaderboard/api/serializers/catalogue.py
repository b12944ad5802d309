"""The catalogue's serializers: model files (and registering one), hardware kinds, llama.cpp builds
(and retiring one). Configs, also listed in the catalogue's views, are `serializers.configs`."""

from __future__ import annotations

from rest_framework import serializers

from leaderboard.models import EngineBuild, Hardware, ModelFile


class ModelFileSerializer(serializers.ModelSerializer):
    class Meta:
        model = ModelFile
        fields = [
            "id", "name", "path", "sha256", "size_bytes", "architecture", "role", "metadata",
            "created_at", "hf_repo", "hf_file", "hf_revision",
        ]  # fmt: skip
        read_only_fields = fields


class ModelRegistrationSerializer(serializers.Serializer):
    path = serializers.CharField(
        max_length=255, help_text="The GGUF file, relative to the server's models directory."
    )
    role = serializers.ChoiceField(choices=ModelFile.Role.values, required=False)
    name = serializers.CharField(max_length=200, required=False)


class HubModelRegistrationSerializer(serializers.Serializer):
    hf_repo = serializers.CharField(
        max_length=200, help_text="The Hugging Face repository, e.g. unsloth/Qwen3-8B-GGUF."
    )
    hf_file = serializers.CharField(max_length=255, help_text="The .gguf file's path in it.")
    revision = serializers.CharField(
        max_length=255,
        required=False,
        allow_blank=True,
        help_text="A branch, tag or commit (default: main); stored as the commit it resolves to.",
    )
    role = serializers.ChoiceField(choices=ModelFile.Role.values, required=False)
    name = serializers.CharField(max_length=200, required=False)


class HardwareGpuSerializer(serializers.Serializer):
    name = serializers.CharField()
    memory_bytes = serializers.IntegerField(allow_null=True)


class HardwareSerializer(serializers.ModelSerializer):
    served = serializers.SerializerMethodField()
    label = serializers.CharField(  # type: ignore[assignment]  # declared fields leave the class; stubs see Field.label
        read_only=True, help_text='The kind in words: "RTX 4090", "2x RTX 3090 24GB".'
    )
    gpus = HardwareGpuSerializer(
        source="gpu_list", many=True, read_only=True, help_text="Each GPU, in the engine's order."
    )

    class Meta:
        model = Hardware
        fields = [
            "slug", "gpu_name", "memory_bytes", "driver", "cuda", "host", "self_reported", "served",
            "gpu_count", "gpus", "label",
        ]  # fmt: skip
        read_only_fields = fields

    def get_served(self, hardware: Hardware) -> bool:
        return bool(hardware.queue_name)


class EngineBuildSerializer(serializers.ModelSerializer):
    class Meta:
        model = EngineBuild
        fields = ["release", "retired", "note", "first_seen"]
        read_only_fields = fields


class RetireBuildInputSerializer(serializers.Serializer):
    note = serializers.CharField(max_length=300, required=False, allow_blank=True)


class RetireBuildReportSerializer(serializers.Serializer):
    release = serializers.CharField()
    retired = serializers.BooleanField()
    entries_retired = serializers.IntegerField()
