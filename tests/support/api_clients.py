"""The API tests' clients and what they send: an anonymous client, a token client of the test
user and of an admin, the speculative config they submit, a result file upload and a seed-kit
CSV import; how many rows of each kind are stored (what a refused request leaves as it was), and
a guard that fails if handling a request starts a process.

tests/leaderboard/api/conftest.py imports the fixtures; the helpers are imported by name.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard.accounts.services import issue_api_token
from leaderboard.models import Config, Hardware, Job, LeaderboardEntry, RequestRecord, Run
from runner.config import BenchmarkConfig

# A tiny DFlash config on the registered tiny models (the `models` fixture).
SPECULATIVE = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


# Text that would do harm if anything ran it in a shell, used it as a path or rendered it.
HOSTILE_STRINGS = [
    "<script>alert(1)</script>",
    "$(touch /tmp/specboard-pwned)",
    "`reboot`; rm -rf / && echo",
    "../../etc/passwd",
    "a|b>c<d&e;f",
]


def token_client(user) -> APIClient:
    """An API client that sends a fresh API token of `user`."""
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {issue_api_token(user=user, name='tests').key}")
    return api


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


@pytest.fixture
def signed_in(user) -> APIClient:
    """The test user's token client."""
    return token_client(user)


@pytest.fixture
def admin(django_user_model) -> APIClient:
    return token_client(django_user_model.objects.create_user(username="root", is_staff=True))


def upload(api: APIClient, result: object, hardware: str = "RTX 4090", **fields: object):
    """POST /api/v1/uploads: a result file (JSON of `result`, or bytes as given) and its fields."""
    content = result if isinstance(result, bytes) else json.dumps(result).encode()
    body = {"file": SimpleUploadedFile("result.json", content), "hardware": hardware} | fields
    return api.post("/api/v1/uploads", body, format="multipart")


def honest_result(make_result, decode: list[float]) -> dict:
    """The speculative config's result whose summary is what its requests give."""
    return make_result(BenchmarkConfig.model_validate(SPECULATIVE), decode)


def post_csv(api: APIClient, content: bytes, hardware: str = "RTX 3090", **fields: object):
    """POST /api/v1/imports: a seed-kit CSV of this content and its fields."""
    body = {"file": SimpleUploadedFile("runs.csv", content), "hardware": hardware} | fields
    return api.post("/api/v1/imports", body, format="multipart")


def row_counts() -> dict[str, int]:
    """How many configs, hardware kinds, jobs, rows, request records and runs are stored."""
    models = (Config, Hardware, Job, LeaderboardEntry, RequestRecord, Run)
    return {model.__name__: model.objects.count() for model in models}


@pytest.fixture
def no_subprocess(monkeypatch: pytest.MonkeyPatch) -> list:
    """Fails loudly if anything tries to start a process while a request is handled."""
    started: list = []

    def refuse(*args, **kwargs):
        started.append(args)
        raise AssertionError(f"a process was started: {args!r}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr("os.system", refuse)
    return started
