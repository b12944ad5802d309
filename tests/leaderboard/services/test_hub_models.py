"""Models by Hugging Face reference (services.hub_models): registration, its errors, the API and
model requests; hostile references and requests are field errors (a Hub that drops the header
read, a name or path longer than its column), and a user has at most so many requests waiting.

The real huggingface_hub code talks to a local Hub (tests/support/hub_server.py) that serves
the tiny GGUF fixtures in the Hub's layout; nothing leaves the machine."""

from __future__ import annotations

import hashlib

import pytest
from django.test import Client
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.models import ModelFile, ModelRequest
from leaderboard.services.hub_models import MAX_PENDING_REQUESTS
from runner import hub as runner_hub
from runner import jobs
from runner.errors import RunnerError
from tests.support.hub_server import HubServer, closed_port
from tests.support.pages import answers_well

REPO = "tiny-org/tiny-qwen3-GGUF"
FILE = "tiny-qwen3.gguf"


@pytest.fixture
def hub(settings, tiny_models):
    with HubServer() as server:
        server.commit(
            REPO, {FILE: tiny_models[FILE], "tiny-dflash.gguf": tiny_models["tiny-dflash.gguf"]}
        )
        settings.SPECBOARD_HF_ENDPOINT = server.endpoint
        settings.SPECBOARD_HF_TOKEN = None
        yield server


@pytest.fixture
def admin_user(django_user_model):
    return django_user_model.objects.create_user(
        username="root", password="correct-horse-battery", is_staff=True
    )


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_hub_file_is_registered_at_the_commit_its_branch_resolves_to(db, hub, tiny_models):
    model = services.register_hub_model(hf_repo=REPO, hf_file=FILE, revision="main")

    content = tiny_models[FILE].read_bytes()
    commit = hub.repos[REPO].refs["main"]
    assert (model.hf_repo, model.hf_file, model.hf_revision) == (REPO, FILE, commit)
    assert model.path == f"hf/{REPO}/{commit}/{FILE}"
    assert model.sha256 == sha256(content) and model.size_bytes == len(content)
    assert model.architecture == "qwen3" and model.role == "target"
    assert model.metadata["n_embd"] == 64 and model.metadata["vocab_size"] == 256
    assert model.test_weights  # the tiny writer's own mark, read from the remote header


def test_the_header_is_read_by_growing_ranges_before_the_whole_file(
    db, hub, tiny_models, monkeypatch
):
    monkeypatch.setattr(runner_hub, "FIRST_HEADER_BYTES", 1024)
    size = tiny_models[FILE].stat().st_size

    services.register_hub_model(hf_repo=REPO, hf_file=FILE)

    ranges = [request.range for request in hub.cdn_gets()]
    assert ranges[0] == "bytes=0-1023" and len(ranges) >= 2
    assert all(r is not None for r in ranges)  # never a request for the whole file
    last = int(ranges[-1].rsplit("-", 1)[1]) + 1
    assert last < size


def test_a_draft_is_registered_with_its_dflash_metadata(db, hub):
    model = services.register_hub_model(hf_repo=REPO, hf_file="tiny-dflash.gguf")

    assert model.role == "draft" and model.architecture == "dflash"
    assert model.metadata["dflash_target_layers"] == [1, 3]


def test_a_file_kept_in_git_gets_its_sha256_by_streaming_it_once(db, hub, tiny_models):
    hub.commit("plain/repo", {FILE: tiny_models[FILE]}, lfs=False)

    model = services.register_hub_model(hf_repo="plain/repo", hf_file=FILE)

    assert model.sha256 == sha256(tiny_models[FILE].read_bytes())


@pytest.mark.parametrize(
    ("reference", "field", "words"),
    [
        ({"hf_repo": "nobody/nothing", "hf_file": FILE}, "hf_repo", "no repository"),
        ({"hf_repo": REPO, "hf_file": "missing.gguf"}, "hf_file", "has no file missing.gguf"),
        ({"hf_repo": REPO, "hf_file": FILE, "revision": "v9"}, "revision", "does not exist"),
        ({"hf_repo": "not a repo", "hf_file": FILE}, "hf_repo", "not a repository id"),
        ({"hf_repo": REPO, "hf_file": "../x.gguf"}, "hf_file", "not a .gguf file path"),
    ],
)
def test_a_bad_reference_is_a_field_error_and_registers_nothing(db, hub, reference, field, words):
    with pytest.raises(services.RegistrationError) as refused:
        services.register_hub_model(**reference)

    assert words in " ".join(refused.value.errors[field])
    assert not ModelFile.objects.exists()


def test_a_file_that_is_not_a_gguf_is_refused(db, hub):
    hub.commit("junk/repo", {"model.gguf": b"PK\x03\x04 this is a zip file" * 100})

    with pytest.raises(services.RegistrationError) as refused:
        services.register_hub_model(hf_repo="junk/repo", hf_file="model.gguf")

    assert "not a GGUF file" in refused.value.errors["hf_file"][0]
    assert not ModelFile.objects.exists()


def test_a_truncated_file_is_refused(db, hub, tiny_models):
    hub.truncate_to = tiny_models[FILE].stat().st_size // 2

    with pytest.raises(services.RegistrationError) as refused:
        services.register_hub_model(hf_repo=REPO, hf_file=FILE)

    assert "truncated" in refused.value.errors["hf_file"][0]
    assert not ModelFile.objects.exists()


def test_a_header_whose_tensors_run_past_the_file_is_refused(db, hub, tiny_models):
    content = tiny_models[FILE].read_bytes()
    hub.commit("cut/repo", {FILE: content[: len(content) - 4096]})

    with pytest.raises(services.RegistrationError) as refused:
        services.register_hub_model(hf_repo="cut/repo", hf_file=FILE)

    assert "truncated" in refused.value.errors["hf_file"][0]


def test_a_sha256_change_at_the_same_commit_is_refused_and_keeps_the_registered_file(
    db, hub, tiny_models
):
    model = services.register_hub_model(hf_repo=REPO, hf_file=FILE)
    changed = tiny_models["tiny-mtp.gguf"].read_bytes()
    hub.replace_content(REPO, model.hf_revision, FILE, changed)

    with pytest.raises(services.RegistrationError) as refused:
        services.register_hub_model(hf_repo=REPO, hf_file=FILE, revision=model.hf_revision)

    assert "the Hub now gives" in refused.value.errors["hf_file"][0]
    kept = ModelFile.objects.get()
    assert kept.sha256 == model.sha256 and kept.architecture == "qwen3"


def test_a_hub_model_can_be_picked_in_a_submission(
    db, hub, hardware, user, enqueued, django_capture_on_commit_callbacks
):
    model = services.register_hub_model(hf_repo=REPO, hf_file=FILE)

    with django_capture_on_commit_callbacks(execute=True):
        job = services.submit_config(
            owner=user,
            data={"target_model": model.path, "protocol": {"name": "quick", "n_predict": 16}},
            hardware_slug=hardware.slug,
        )

    (sent,) = enqueued
    target = sent["kwargs"]["models"]["target"]
    assert job.config.target == model
    assert target == {
        "path": model.path,
        "sha256": model.sha256,
        "hf_repo": REPO,
        "hf_file": FILE,
        "hf_revision": model.hf_revision,
        "size_bytes": model.size_bytes,
    }


# The API ------------------------------------------------------------------------------------


def test_admins_register_a_hub_model_through_the_api(db, hub, admin_user):
    client = APIClient()
    client.force_authenticate(admin_user)

    response = client.post(
        "/api/v1/models", {"hf_repo": REPO, "hf_file": FILE, "revision": "main"}, format="json"
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["hf_repo"] == REPO and body["hf_revision"] == hub.repos[REPO].refs["main"]
    assert body["path"] == ModelFile.objects.get().path


def test_the_api_gives_field_errors_for_a_bad_hub_reference(db, hub, admin_user):
    client = APIClient()
    client.force_authenticate(admin_user)

    response = client.post(
        "/api/v1/models", {"hf_repo": REPO, "hf_file": FILE, "revision": "nope"}, format="json"
    )

    assert response.status_code == 400
    assert "does not exist" in str(response.json()["revision"])
    assert not ModelFile.objects.exists()


def test_only_admins_register_hub_models(db, hub, user):
    client = APIClient()
    body = {"hf_repo": REPO, "hf_file": FILE}
    assert client.post("/api/v1/models", body, format="json").status_code in (401, 403)
    client.force_authenticate(user)
    assert client.post("/api/v1/models", body, format="json").status_code == 403
    assert not ModelFile.objects.exists()


# Model requests -----------------------------------------------------------------------------


def test_users_request_models_and_see_only_their_own(db, hub, user, django_user_model):
    other = django_user_model.objects.create_user(username="bob", password="x-y-z-w-v")
    services.request_model(requester=other, hf_repo=REPO, hf_file="tiny-dflash.gguf")
    client = APIClient()
    client.force_authenticate(user)

    created = client.post("/api/v1/model-requests", {"hf_repo": REPO, "hf_file": FILE})
    listed = client.get("/api/v1/model-requests").json()

    assert created.status_code == 201 and created.json()["state"] == "pending"
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [(row["hf_file"], row["state"]) for row in rows] == [(FILE, "pending")]
    bad = client.post("/api/v1/model-requests", {"hf_repo": "no repo", "hf_file": FILE})
    assert bad.status_code == 400 and "hf_repo" in bad.json()
    assert APIClient().get("/api/v1/model-requests").status_code in (401, 403)


def test_approving_a_request_registers_the_model_and_the_requester_sees_it(
    db, hub, user, admin_user, client
):
    asked = services.request_model(requester=user, hf_repo=REPO, hf_file=FILE)

    model = services.approve_model_request(model_request=asked, admin=admin_user)

    asked.refresh_from_db()
    assert asked.state == "approved" and asked.model == model and asked.decided_by == admin_user
    assert model.hf_repo == REPO and model.registered_by == admin_user
    client.force_login(user)
    page = client.get("/model-requests/").content.decode()
    assert "approved" in page and model.name in page
    with pytest.raises(services.ModelRequestError):
        services.refuse_model_request(model_request=asked, admin=admin_user)


def test_a_request_whose_file_cannot_be_registered_stays_pending(db, hub, user, admin_user):
    asked = services.request_model(requester=user, hf_repo=REPO, hf_file="missing.gguf")

    with pytest.raises(services.RegistrationError):
        services.approve_model_request(model_request=asked, admin=admin_user)

    asked.refresh_from_db()
    assert asked.state == "pending" and not ModelFile.objects.exists()


def test_refusing_a_request_registers_nothing_and_shows_the_note(db, hub, user, admin_user, client):
    asked = services.request_model(requester=user, hf_repo=REPO, hf_file=FILE)

    services.refuse_model_request(model_request=asked, admin=admin_user, note="too large")

    assert ModelRequest.objects.get().state == "refused" and not ModelFile.objects.exists()
    client.force_login(user)
    page = client.get("/model-requests/").content.decode()
    assert "refused" in page and "too large" in page


def test_the_request_page_takes_a_request_and_shows_field_errors(db, hub, user, client):
    client.force_login(user)

    bad = client.post("/model-requests/", {"hf_repo": "no repo", "hf_file": FILE})
    good = client.post("/model-requests/", {"hf_repo": REPO, "hf_file": FILE, "revision": ""})

    assert bad.status_code == 200 and "not a repository id" in bad.content.decode()
    assert good.status_code == 302
    assert ModelRequest.objects.get().requester == user


def test_admins_approve_and_refuse_requests_with_the_admin_actions(
    db, hub, user, admin_user, client
):
    admin_user.is_superuser = True
    admin_user.save()
    approve = services.request_model(requester=user, hf_repo=REPO, hf_file=FILE)
    refuse = services.request_model(requester=user, hf_repo=REPO, hf_file="tiny-dflash.gguf")
    client.force_login(admin_user)
    url = "/admin/leaderboard/modelrequest/"

    client.post(url, {"action": "approve", "_selected_action": [approve.pk]})
    client.post(url, {"action": "refuse", "_selected_action": [refuse.pk]})

    states = dict(ModelRequest.objects.values_list("pk", "state"))
    assert states == {approve.pk: "approved", refuse.pk: "refused"}
    assert ModelFile.objects.get().hf_file == FILE


def test_the_admin_registers_a_model_by_hub_reference(db, hub, admin_user, client):
    admin_user.is_superuser = True
    admin_user.save()
    client.force_login(admin_user)
    url = "/admin/leaderboard/modelfile/register-hub/"

    refused = client.post(url, {"hf_repo": "nobody/nothing", "hf_file": FILE})
    registered = client.post(url, {"hf_repo": REPO, "hf_file": FILE, "revision": "main"})

    assert refused.status_code == 200 and "no repository" in refused.content.decode()
    assert registered.status_code == 302
    assert ModelFile.objects.get().hf_revision == hub.repos[REPO].refs["main"]


# The GPU worker's task --------------------------------------------------------------------


@pytest.fixture
def worker_messages(monkeypatch):
    """What the GPU task sends back, captured: (kind, job_id, body)."""
    from leaderboard.messaging import dispatch

    sent: list[tuple[str, int, dict]] = []
    monkeypatch.setattr(
        dispatch,
        "send_progress",
        lambda *, job_id, delivery, progress: sent.append(("progress", job_id, progress)),
    )
    monkeypatch.setattr(
        dispatch,
        "send_failure",
        lambda *, job_id, delivery, error, log_tail="": sent.append(
            ("failure", job_id, {"error": error})
        ),
    )
    monkeypatch.setattr(
        dispatch,
        "send_result",
        lambda *, job_id, delivery, result: sent.append(("result", job_id, result)),
    )
    return sent


def run_task(model: ModelFile) -> None:
    from leaderboard import tasks
    from leaderboard.services.jobs import job_payload

    class FakeJob:
        pk = 7

        class config:  # noqa: N801 - what job_payload reads
            canonical = {"target_model": model.path}
            target = model
            draft = None
            baseline_id = None
            synthetic = False

        class hardware:  # noqa: N801 - the kind's GPUs, which job_payload names
            @staticmethod
            def gpu_list() -> list[dict]:
                return [{"name": "H200", "memory_bytes": None}]

    payload = job_payload(FakeJob)
    payload.pop("job_id")
    tasks.run_benchmark_job.apply(kwargs={"job_id": 7, **payload})


def test_the_gpu_task_fetches_a_hub_model_into_its_cache_before_the_benchmark(
    db, hub, settings, tmp_path, worker_messages, monkeypatch, tiny_models
):
    settings.SPECBOARD_MODEL_CACHE_DIR = tmp_path / "cache"
    model = services.register_hub_model(hf_repo=REPO, hf_file=FILE)
    seen: list[bytes] = []

    def benchmark(config, *, models_dir, **kwargs):
        seen.append((models_dir / config.target_model).read_bytes())
        raise RunnerError("stopped here: the engine is another test's business")

    monkeypatch.setattr(jobs, "run_benchmark", benchmark)
    run_task(model)

    assert seen == [tiny_models[FILE].read_bytes()]
    downloads = [body for kind, _, body in worker_messages if body.get("phase") == "downloading"]
    assert downloads[-1] == {
        "phase": "downloading",
        "downloaded_bytes": model.size_bytes,
        "total_bytes": model.size_bytes,
    }


def test_the_gpu_task_refuses_a_hub_model_whose_bytes_changed_before_any_engine(
    db, hub, settings, tmp_path, worker_messages, monkeypatch
):
    settings.SPECBOARD_MODEL_CACHE_DIR = tmp_path / "cache"
    model = services.register_hub_model(hf_repo=REPO, hf_file=FILE)
    content = bytearray(hub.repos[REPO].commits[model.hf_revision][FILE])
    content[-1] ^= 0xFF
    hub._blobs[model.sha256] = bytes(content)  # the CDN now serves other bytes
    monkeypatch.setattr(jobs, "run_benchmark", lambda *a, **k: pytest.fail("an engine started"))

    run_task(model)

    (failure,) = [body for kind, _, body in worker_messages if kind == "failure"]
    assert "sha256 mismatch" in failure["error"]


def test_the_job_page_and_api_say_how_much_of_the_model_is_downloaded(
    db, models, hardware, user, client
):
    job = services.submit_config(
        owner=user, data={"target_model": "tiny-qwen3.gguf"}, hardware_slug=hardware.slug
    )
    services.record_progress(job_id=job.pk, progress={"phase": "started"})
    services.record_progress(
        job_id=job.pk,
        progress={
            "phase": "downloading",
            "downloaded_bytes": 3_100_000_000,
            "total_bytes": 16_900_000_000,
        },
    )

    page = client.get(f"/jobs/{job.pk}/").content.decode()
    progress = client.get(f"/api/v1/jobs/{job.pk}").json()["progress"]

    assert "downloading 3.1 of 16.9 GB" in page
    assert (
        progress["downloaded_bytes"] == 3_100_000_000 and progress["total_bytes"] == 16_900_000_000
    )
    assert progress["download"] == "downloading 3.1 of 16.9 GB"


# Hostile references and requests --------------------------------------------------------------


# What a hostile request can put in a field: NULs, lengths past any column, paths, other
# scripts, markup, and values that are no text at all.
HOSTILE_TEXT = ["\x00", "a\x00b", "x" * 20_000, "../x", "%00", "é日本🙂\u202e", " ", "<script>"]
HOSTILE_VALUES = [*HOSTILE_TEXT, None, -1, 10**30, 1e308, True, [], ["a"], {}, {"a": {"b": []}}]


@pytest.fixture
def admin_api(django_user_model) -> APIClient:
    admin = django_user_model.objects.create_superuser(username="root", password="x" * 16)
    api = APIClient()
    api.force_authenticate(admin)
    return api


@pytest.mark.parametrize("field", ["hf_repo", "hf_file", "revision", "role", "name"])
@pytest.mark.parametrize("value", HOSTILE_VALUES, ids=repr)
def test_hostile_model_references_are_field_errors(db, admin_api, settings, field, value):
    settings.SPECBOARD_HF_ENDPOINT = f"http://127.0.0.1:{closed_port()}"
    body = {"hf_repo": "org/repo", "hf_file": "m.gguf", field: value}

    response = admin_api.post("/api/v1/models", body, format="json")

    assert response.status_code == 400, response.content
    assert set(response.json()) <= {"hf_repo", "hf_file", "revision", "role", "name", "path"}
    assert not ModelFile.objects.exists()


def test_a_hub_that_drops_the_header_read_is_a_field_error(db, admin_api, hub):
    hub.drops_left, hub.drop_after_bytes = 100, 16

    response = admin_api.post("/api/v1/models", {"hf_repo": REPO, "hf_file": FILE}, format="json")

    assert response.status_code == 400, response.content
    assert "hf_file" in response.json()
    assert not ModelFile.objects.exists()


@pytest.mark.parametrize(
    ("repo", "file", "field"),
    [
        ("a" * 65 + "/" + "b" * 65, "c" * 70 + ".gguf", "name"),  # a 210-character name
        ("a" * 90 + "/" + "b" * 90, "c" * 150 + ".gguf", None),  # and a 430-character path
    ],
    ids=["long-name", "long-path"],
)
def test_a_hub_file_whose_name_or_path_cannot_be_stored_is_a_field_error(
    db, admin_api, settings, tiny_models, repo, file, field
):
    with HubServer() as server:
        server.commit(repo, {file: tiny_models[FILE]})
        settings.SPECBOARD_HF_ENDPOINT = server.endpoint

        response = admin_api.post("/api/v1/models", {"hf_repo": repo, "hf_file": file})

    assert response.status_code == 400, response.content
    if field:
        assert "give a name" in response.json()[field][0]
    assert not ModelFile.objects.exists()


def test_a_model_with_the_longest_name_can_be_benchmarked_and_shown(
    db, admin_api, hub, user, hardware, enqueued
):
    registered = admin_api.post(
        "/api/v1/models", {"hf_repo": REPO, "hf_file": FILE, "name": "x" * 200}
    ).json()
    api, web = APIClient(), Client()
    api.force_authenticate(user)
    web.force_login(user)
    config = {"target_model": registered["path"], "protocol": {"name": "quick", "n_predict": 8}}

    response = api.post(
        "/api/v1/submissions", {"config": config, "hardware": hardware.slug}, format="json"
    )

    assert response.status_code == 201, response.content
    job = response.json()["id"]
    for page in [f"/jobs/{job}/", "/jobs/", "/account/", "/submit/", "/models/", "/hosts/"]:
        assert web.get(page).status_code == 200, page
    assert api.get(f"/api/v1/jobs/{job}").status_code == 200


@pytest.mark.parametrize("field", ["hf_repo", "hf_file", "revision"])
@pytest.mark.parametrize("value", HOSTILE_VALUES, ids=repr)
def test_hostile_model_requests_are_field_errors_and_the_pages_still_show(user, field, value):
    api = APIClient()
    api.force_authenticate(user)
    body = {"hf_repo": "org/repo", "hf_file": "m.gguf", field: value}

    response = api.post("/api/v1/model-requests", body, format="json")

    assert response.status_code in (201, 400), response.content
    if response.status_code == 400:
        assert set(response.json()) <= {"hf_repo", "hf_file", "revision"}
    assert answers_well(APIClient().post("/api/v1/model-requests", body, format="json"))
    assert APIClient().post("/api/v1/model-requests", body, format="json").status_code == 401
    web = Client()
    web.force_login(user)
    if isinstance(value, str):
        assert answers_well(web.post("/model-requests/", body))
    assert web.get("/model-requests/").status_code == 200
    assert api.get("/api/v1/model-requests").status_code == 200


@pytest.mark.parametrize("through", ["api", "page"])
def test_a_user_has_at_most_so_many_model_requests_waiting(user, through):
    for n in range(MAX_PENDING_REQUESTS):
        services.request_model(requester=user, hf_repo="org/repo", hf_file=f"m{n}.gguf")
    body = {"hf_repo": "org/repo", "hf_file": "one-more.gguf"}

    if through == "api":
        api = APIClient()
        api.force_authenticate(user)
        response = api.post("/api/v1/model-requests", body, format="json")
        assert response.status_code == 400
        assert "waiting for an admin" in response.json()["hf_file"][0]
    else:
        web = Client()
        web.force_login(user)
        response = web.post("/model-requests/", body)
        assert response.status_code == 200
        assert "waiting for an admin" in response.content.decode()
    assert ModelRequest.objects.filter(requester=user).count() == MAX_PENDING_REQUESTS


def test_a_decided_request_makes_room_for_another(user, django_user_model):
    admin = django_user_model.objects.create_superuser(username="root", password="x" * 16)
    for n in range(MAX_PENDING_REQUESTS):
        services.request_model(requester=user, hf_repo="org/repo", hf_file=f"m{n}.gguf")
    services.refuse_model_request(model_request=ModelRequest.objects.first(), admin=admin)

    created = services.request_model(requester=user, hf_repo="org/repo", hf_file="next.gguf")

    assert created.state == ModelRequest.State.PENDING
