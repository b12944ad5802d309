"""The catalogue: registered model files, hardware kinds, llama.cpp builds and configs.

Everything here is public to read. Staff register a GGUF model file (POST /models) and retire a
bad llama.cpp release (POST /builds/<release>/retire), which takes its rows off the ranking;
configs are created by submissions, never here.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.http import Http404
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import generics, status
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import selectors, services
from leaderboard.api import finished
from leaderboard.api import serializers as s
from leaderboard.api.permissions import ReadOnlyOrAdmin, signed_in_user
from leaderboard.models import Config, Hardware, ModelFile


class ModelListCreate(generics.ListAPIView):
    """Registered model files (GET, public); register a GGUF file (POST, admins only)."""

    serializer_class = s.ModelFileSerializer
    permission_classes = [ReadOnlyOrAdmin]
    queryset = ModelFile.objects.order_by("name")

    @extend_schema(
        request=PolymorphicProxySerializer(
            component_name="ModelRegistrationInput",
            serializers=[s.ModelRegistrationSerializer, s.HubModelRegistrationSerializer],
            resource_type_field_name=None,
        ),
        responses={201: s.ModelFileSerializer},
    )
    def post(self, request: Request) -> Response:
        # A body naming `hf_repo` registers a file of the Hugging Face Hub at a commit.
        if "hf_repo" in request.data:
            hub = s.HubModelRegistrationSerializer(data=request.data)
            hub.is_valid(raise_exception=True)
            model = services.register_hub_model(
                **hub.validated_data, registered_by=signed_in_user(request)
            )
            return Response(s.ModelFileSerializer(model).data, status=status.HTTP_201_CREATED)
        incoming = s.ModelRegistrationSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        model = services.register_model(
            **incoming.validated_data, registered_by=signed_in_user(request)
        )
        return Response(s.ModelFileSerializer(model).data, status=status.HTTP_201_CREATED)


class HardwareList(generics.ListAPIView):
    """Hardware kinds: those our workers serve, and those named by self-reported uploads."""

    serializer_class = s.HardwareSerializer
    queryset = Hardware.objects.order_by("gpu_name", "slug")


class BuildList(generics.ListAPIView):
    """llama.cpp releases seen in results, and whether an admin retired them."""

    serializer_class = s.EngineBuildSerializer

    def get_queryset(self):
        return selectors.engine_builds()


class BuildRetire(APIView):
    """Retire a bad llama.cpp release: its rows leave the ranking (admins only)."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        request=s.RetireBuildInputSerializer, responses={200: s.RetireBuildReportSerializer}
    )
    def post(self, request: Request, release: str) -> Response:
        incoming = s.RetireBuildInputSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        if not selectors.engine_builds().filter(release=release).exists():
            raise Http404
        retired = services.retire_engine_build(
            release=release, note=incoming.validated_data.get("note", "")
        )
        report = {"release": release, "retired": True, "entries_retired": retired}
        return Response(s.RetireBuildReportSerializer(report).data)


class ConfigList(finished.FinishedValues, generics.ListAPIView):
    serializer_class = s.ConfigSerializer
    queryset = Config.objects.select_related("target", "draft", "baseline").order_by(
        "-created_at", "id"
    )

    def finish(self, objects: Sequence[Config]) -> None:
        finished.configs(objects)


class ConfigDetail(finished.FinishedValues, generics.RetrieveAPIView):
    """A config, with its best row's concurrency levels, categories and energy where it has them."""

    serializer_class = s.ConfigDetailSerializer
    queryset = Config.objects.select_related("target", "draft", "baseline")
    lookup_field = "key"

    def finish(self, objects: Sequence[Config]) -> None:
        finished.configs(objects, detail=True)
