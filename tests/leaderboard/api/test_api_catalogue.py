"""The catalogue: GET /api/v1/models, /hardware and /builds are public; registering a model
(POST /models) and retiring a llama.cpp build (POST /builds/<release>/retire) are for admins."""

from __future__ import annotations

from leaderboard import services
from leaderboard.models import LeaderboardEntry, ModelFile
from tests.support.api_clients import SPECULATIVE


def test_models_and_hardware_are_listed_without_a_token(anonymous, models, hardware):
    assert anonymous.get("/api/v1/models").json()["count"] == 5
    assert anonymous.get("/api/v1/hardware").json()["results"][0]["served"] is True


def test_only_admins_register_models(anonymous, signed_in, admin, db):
    body = {"path": "tiny-qwen3.gguf"}
    assert anonymous.post("/api/v1/models", body, format="json").status_code == 401
    assert signed_in.post("/api/v1/models", body, format="json").status_code == 403
    assert not ModelFile.objects.exists()

    response = admin.post("/api/v1/models", body, format="json")

    assert response.status_code == 201, response.json()
    assert response.json()["name"] == "tiny-qwen3" and response.json()["role"] == "target"
    traversal = admin.post("/api/v1/models", {"path": "../../etc/passwd"}, format="json")
    assert traversal.status_code == 400 and "outside the models directory" in str(traversal.json())
    assert ModelFile.objects.count() == 1


def test_only_admins_retire_builds(
    anonymous, signed_in, admin, models, hardware, user, enqueued, make_result
):
    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0, 110.0]))
    assert anonymous.get("/api/v1/builds").json()["results"][0]["release"] == "b11434"

    assert anonymous.post("/api/v1/builds/b11434/retire").status_code == 401
    assert signed_in.post("/api/v1/builds/b11434/retire").status_code == 403
    assert admin.post("/api/v1/builds/b99999/retire").status_code == 404
    assert not LeaderboardEntry.objects.filter(retired=True).exists()

    response = admin.post("/api/v1/builds/b11434/retire", {"note": "bad build"}, format="json")

    assert response.status_code == 200 and response.json()["entries_retired"] == 1
    assert anonymous.get("/api/v1/leaderboard").json()["count"] == 0
