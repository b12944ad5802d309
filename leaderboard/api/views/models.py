"""Model requests: a signed-in user asks for a Hugging Face model; admins decide in the admin.

`GET /model-requests` lists your own requests with their state and the admin's note;
`POST /model-requests` asks for a repository's file (optionally at a revision). Registering a
model by Hugging Face reference is `POST /models` with `hf_repo` (catalogue, admins only).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard import selectors, services
from leaderboard.api import serializers as s
from leaderboard.api.permissions import signed_in_user


class ModelRequestListCreate(generics.ListAPIView):
    """Your model requests (GET); ask for a Hugging Face model (POST)."""

    serializer_class = s.ModelRequestSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        return selectors.user_model_requests(user=self.request.user)

    @extend_schema(request=s.ModelRequestInputSerializer, responses={201: s.ModelRequestSerializer})
    def post(self, request: Request) -> Response:
        incoming = s.ModelRequestInputSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        created = services.request_model(
            requester=signed_in_user(request), **incoming.validated_data
        )
        return Response(s.ModelRequestSerializer(created).data, status=status.HTTP_201_CREATED)
