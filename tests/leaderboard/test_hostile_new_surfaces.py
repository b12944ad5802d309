"""A hostile user against the surfaces new this session: accounts and sign-in, API tokens, models
by Hugging Face reference and model requests, the submit form's estimate and its query, /hosts/,
/concurrency/, /categories/ and their API, a job's queue standing.

Every probe must answer below 500 with valid JSON where JSON is the answer, on SQLite and on
PostgreSQL (which refuses NUL in text: run this file with DATABASE_URL set to each), write nothing
it should not, and show nobody else's tokens or requests. Each case here failed before its fix:
an unreachable or failing Hub (a 500 to the admin), ?from= and ?hardware= holding a NUL on the
submit page (a 500 on PostgreSQL), a sign-in name longer than axes' column (a 500 on PostgreSQL),
a per-account sign-in lockout that a change of case or of name for address started afresh,
model requests without any bound, a Hub file whose derived name is longer than its column,
a config label longer than its column (both 500s on PostgreSQL), and the terminal client's traceback when a site answers a
redirect or something other than a JSON object.
"""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from allauth.account.models import EmailAddress
from axes.models import AccessAttempt
from django.test import Client
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.accounts.forms import MAX_LOGIN_LENGTH
from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.selectors import sign_in_name
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import ModelFile, ModelRequest
from leaderboard.services.hub_models import MAX_PENDING_REQUESTS
from runner import client
from runner import hub as runner_hub
from tests.support.hub_server import HubServer

REPO = "tiny-org/tiny-qwen3-GGUF"
FILE = "tiny-qwen3.gguf"
BASELINE = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 8}}
HOSTILE_TEXT = ["\x00", "a\x00b", "x" * 20_000, "../x", "%00", "é日本🙂\u202e", " ", "<script>"]
HOSTILE_VALUES = [*HOSTILE_TEXT, None, -1, 10**30, 1e308, True, [], ["a"], {}, {"a": {"b": []}}]
QUERIES = [
    "target=%00",
    "hardware=../x",
    "hardware=%00",
    "target=a&target=b&target=%00&hardware=x&hardware=%00",
    "from=%00",
    "from=abc%00def",
    "from=" + "a" * 70,
    "preset=%00",
    "preset=../x",
    "page=%00",
    "page=-1",
    "page=99999999999999999999",
    "format=%00",
    "hardware=%F0%9F%99%82",
    "target=" + "x" * 5000,
]
PAGES = ["/hosts/", "/concurrency/", "/categories/", "/submit/", "/model-requests/", "/account/"]
API = ["/api/v1/hosts", "/api/v1/concurrency", "/api/v1/model-requests", "/api/v1/submissions"]


def answers_well(response) -> bool:
    """Below 500, and JSON that parses wherever JSON is what it says it is."""
    if response.status_code >= 500:
        return False
    if "json" in response.get("Content-Type", ""):
        json.loads(response.content)
    return True


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def admin_api(django_user_model) -> APIClient:
    admin = django_user_model.objects.create_superuser(username="root", password="x" * 16)
    api = APIClient()
    api.force_authenticate(admin)
    return api


@pytest.fixture
def hub(settings, tiny_models):
    with HubServer() as server:
        server.commit(REPO, {FILE: tiny_models[FILE]})
        settings.SPECBOARD_HF_ENDPOINT = server.endpoint
        settings.SPECBOARD_HF_TOKEN = None
        yield server


# --- GET with odd, repeated and NUL-carrying query parameters -----------------------------------


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("path", PAGES + API)
@pytest.mark.parametrize("signed_in", [True, False], ids=["signed-in", "anonymous"])
def test_odd_query_parameters_never_break_a_new_page_or_endpoint(
    user, models, hardware, enqueued, path, query, signed_in
):
    job = services.submit_config(owner=user, data=BASELINE, hardware_slug=hardware.slug)
    client = APIClient() if path.startswith("/api/") else Client()
    if signed_in:
        client.force_login(user)

    assert answers_well(client.get(f"{path}?{query}"))
    assert answers_well(client.get(f"/api/v1/jobs/{job.pk}?{query}"))
    assert answers_well(client.get(f"/jobs/{job.pk}/?{query}"))


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("from=%00", "There is no config with key"),
        ("from=abc%00def", "There is no config with key"),
        ("hardware=%00", None),
        ("hardware=x%00&preset=quick", None),
    ],
)
def test_a_nul_in_the_submit_pages_query_is_no_lookup(user, models, hardware, query, problem):
    """PostgreSQL refuses a NUL in a query's text: the page says there is no such config."""
    client = Client()
    client.force_login(user)

    response = client.get(f"/submit/?{query}")

    assert response.status_code == 200
    if problem:
        assert problem in response.content.decode()


# --- the sign-in form ----------------------------------------------------------------------------


@pytest.mark.parametrize("length", [MAX_LOGIN_LENGTH + 1, 300, 20_000])
def test_a_sign_in_name_longer_than_any_account_is_a_field_error(db, user, length):
    response = Client().post("/accounts/login/", {"login": "x" * length, "password": "nope"})

    assert response.status_code == 200
    assert f"at most {MAX_LOGIN_LENGTH} characters" in response.content.decode()
    assert not AccessAttempt.objects.filter(username__startswith="x" * 200).exists()


@pytest.mark.parametrize("login", ["\x00", "a\x00@b.co", "é@é.é", "x" * MAX_LOGIN_LENGTH])
def test_hostile_sign_ins_and_sign_ups_are_refused_as_forms(db, user, login):
    anonymous = Client()
    for path, body in [
        ("/accounts/login/", {"login": login, "password": "nope"}),
        ("/accounts/signup/", {"username": login, "email": login, "password1": login}),
        ("/accounts/password/reset/", {"email": login}),
    ]:
        response = anonymous.post(path, body)
        assert response.status_code in (200, 302, 429), (path, response.status_code)
    assert not anonymous.session.get("_auth_user_id")


@pytest.mark.parametrize(
    ("guessed_as", "then_as"),
    [
        ("ada@example.com", "ada"),
        ("ada", "ada@example.com"),
        ("ada", "ADA"),
        ("Ada", "aDa"),
        ("ada@example.com", "ADA@Example.com"),
    ],
)
def test_the_lockout_holds_however_the_account_is_typed(user, guessed_as, then_as):
    """Wrong passwords from one address lock the account there, not the spelling that was typed."""
    user.email = "ada@example.com"
    user.save()
    EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
    for _ in range(5):
        Client().post(
            "/accounts/login/",
            {"login": guessed_as, "password": "wrong"},
            REMOTE_ADDR="198.51.100.1",
        )

    browser = Client()
    response = browser.post(
        "/accounts/login/",
        {"login": then_as, "password": "correct-horse-battery"},
        REMOTE_ADDR="198.51.100.1",
    )

    assert response.status_code == 429
    assert "_auth_user_id" not in browser.session
    assert set(AccessAttempt.objects.values_list("username", flat=True)) == {"ada"}


@pytest.mark.parametrize(
    ("typed", "counted_as"),
    [("nobody\x00", "nobody"), ("NoBody", "nobody"), ("x" * 20_000, "x" * 255), ("", "")],
)
def test_a_sign_in_name_that_is_no_account_is_counted_folded_and_bounded(db, typed, counted_as):
    assert sign_in_name(None, {"username": typed}) == counted_as


# --- models by Hugging Face reference ------------------------------------------------------------


@pytest.mark.parametrize("field", ["hf_repo", "hf_file", "revision", "role", "name"])
@pytest.mark.parametrize("value", HOSTILE_VALUES, ids=repr)
def test_hostile_model_references_are_field_errors(db, admin_api, settings, field, value):
    settings.SPECBOARD_HF_ENDPOINT = f"http://127.0.0.1:{closed_port()}"
    body = {"hf_repo": "org/repo", "hf_file": "m.gguf", field: value}

    response = admin_api.post("/api/v1/models", body, format="json")

    assert response.status_code == 400, response.content
    assert set(response.json()) <= {"hf_repo", "hf_file", "revision", "role", "name", "path"}
    assert not ModelFile.objects.exists()


@pytest.mark.parametrize(
    "call",
    [
        lambda port: runner_hub.resolve_hub_file(
            repo=REPO, file=FILE, revision=None, endpoint=f"http://127.0.0.1:{port}"
        ),
        lambda port: runner_hub.read_remote_header(
            runner_hub.HubFile(REPO, FILE, "0" * 40, 4096, None, f"http://127.0.0.1:{port}/f"),
            header_copy=runner_hub.Path("/dev/null"),
        ),
        lambda port: runner_hub.stream_sha256(
            runner_hub.HubFile(REPO, FILE, "0" * 40, 4096, None, f"http://127.0.0.1:{port}/f")
        ),
    ],
    ids=["resolve", "header", "sha256"],
)
def test_a_hub_that_does_not_answer_is_a_hub_error(call):
    with pytest.raises(runner_hub.HubError):
        call(closed_port())


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


# --- model requests ------------------------------------------------------------------------------


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


# --- the submit form's live estimate -------------------------------------------------------------


@pytest.mark.parametrize(
    "field",
    ["hardware", "target_model", "draft_model", "spec_types", "n_max", "ctx_size", "protocol",
     "runs", "n_predict", "concurrency_levels", "context_lengths", "categories"],
)  # fmt: skip
@pytest.mark.parametrize(
    "value", ["\x00", "-1", "99999999999999999999999", "1e309", "nan", "x" * 10_000, "1," * 5000]
)
def test_hostile_estimates_are_field_errors_in_json(user, models, hardware, field, value):
    web = Client()
    web.force_login(user)
    data = {"hardware": hardware.slug, "target_model": "tiny-qwen3", "protocol": "quick"}

    response = web.post("/submit/estimate", data | {field: value})

    assert response.status_code == 200
    body = response.json()
    assert isinstance(body["valid"], bool) and isinstance(body["errors"], list)
    assert "html" in body


# --- other users, CSRF and authentication --------------------------------------------------------


def test_nobody_sees_or_revokes_another_users_tokens_or_requests(
    user, django_user_model, models, hardware, enqueued
):
    issued = issue_api_token(user=user, name="ada-laptop")
    services.request_model(requester=user, hf_repo="ada-org/secret", hf_file="s.gguf")
    job = services.submit_config(owner=user, data=BASELINE, hardware_slug=hardware.slug)
    eve = django_user_model.objects.create_user(username="eve", password="x" * 16)
    web, api = Client(), APIClient()
    web.force_login(eve)
    api.force_authenticate(eve)

    assert web.post(f"/account/tokens/{issued.token.id}/revoke/").status_code == 404
    issued.token.refresh_from_db()
    assert issued.token.revoked_at is None
    for page in ["/account/", "/model-requests/", "/jobs/"]:
        text = web.get(page).content.decode()
        assert "ada-laptop" not in text and issued.token.prefix not in text
        assert "ada-org/secret" not in text
    assert api.get("/api/v1/model-requests").json()["count"] == 0
    assert api.get("/api/v1/submissions").json()["count"] == 0
    assert api.post(f"/api/v1/jobs/{job.pk}/cancel").status_code in (403, 404)
    assert web.post(f"/jobs/{job.pk}/cancel/").status_code in (403, 404)
    job.refresh_from_db()
    assert job.is_active


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/submit/estimate", {}),
        ("/submit/", {}),
        ("/model-requests/", {"hf_repo": "a/b", "hf_file": "c.gguf"}),
        ("/account/", {"name": "x"}),
        ("/api/v1/model-requests", {"hf_repo": "a/b", "hf_file": "c.gguf"}),
        ("/api/v1/submissions", {"config": json.dumps(BASELINE)}),
    ],
)
def test_writes_from_a_signed_in_browser_need_the_csrf_token(user, path, body):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)

    assert browser.post(path, body).status_code == 403
    assert not ModelRequest.objects.exists()
    assert not ApiToken.objects.filter(user=user).exists()


@pytest.mark.parametrize(
    "header",
    ["Token \x00", "Token " + "x" * 10_000, "Bearer", "Bearer a b", "Token é", "token sbk_\x00"],
)
def test_malformed_token_headers_are_401s(db, header):
    response = APIClient().get("/api/v1/model-requests", HTTP_AUTHORIZATION=header)

    assert response.status_code == 401
    assert "detail" in response.json()


# --- the terminal client against a site that is not what it expects -----------------------------


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (lambda: httpx.Response(200, text="<html>portal</html>"), "not a JSON object"),
        (lambda: httpx.Response(201, json=["a", "list"]), "not a JSON object"),
        (lambda: httpx.Response(200, content=b"\x00\xff"), "not a JSON object"),
        (
            lambda: httpx.Response(301, headers={"Location": "https://board.example/api/v1/"}),
            "redirected /api/v1/submissions to 'https://board.example/api/v1/'",
        ),
    ],
    ids=["html", "list", "bytes", "redirect"],
)
def test_the_terminal_client_says_what_a_wrong_site_answered_in_one_error(answer, says):
    transport = httpx.MockTransport(lambda request: answer())
    site = client.SpecboardClient(
        client.Credentials(site="http://board.example", token="sbk_secret"), transport=transport
    )

    with pytest.raises(client.ClientError) as refused:
        site.submit(config=BASELINE, hardware=None)

    assert says in str(refused.value)
    assert "sbk_secret" not in str(refused.value)
    assert not refused.value.transient
