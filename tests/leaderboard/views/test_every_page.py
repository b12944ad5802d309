"""What every page does: render without data, answer HEAD as GET, carry a strict content
security policy with no inline script, draw its charts with the Chart.js served from the site's
own static files, and sign-in renders; an odd or unknown page path is a 404, never an error, an
odd query string never breaks one, and a signed-in browser's writes need the CSRF token."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from leaderboard import services
from leaderboard.accounts.models import ApiToken
from leaderboard.models import ModelRequest
from tests.support.pages import ODD_QUERIES, answers_well

# A queued job whose pages the odd queries are asked of too.
QUEUED = {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "n_predict": 8}}


@pytest.mark.parametrize(
    "url",
    ["/", "/nmax/", "/context/", "/compare/", "/hardware/", "/models/", "/best/"],
)
def test_the_pages_render_without_data_and_without_inline_scripts(client, db, url):
    response = client.get(url)
    assert response.status_code == 200
    assert re.search(r"<script>(?!\s*</script>)", response.content.decode()) is None
    assert "unsafe-inline" not in response.headers["Content-Security-Policy"]


@pytest.mark.parametrize("path", ["/", "/models/", "/hardware/", "/nmax/", "/context/", "/best/"])
def test_html_pages_answer_head_requests_like_get(client, db, path):
    head, get = client.head(path), client.get(path)
    assert head.status_code == get.status_code == 200
    assert head.content == b"" and head["Content-Type"] == get["Content-Type"]


def test_pages_carry_a_strict_content_security_policy(client, measured_job):
    response = client.get(f"/configs/{measured_job.config.key}/")
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert re.search(r"<script>(?!\s*</script>)", response.content.decode()) is None


def test_the_chart_library_is_served_from_our_static_files(client):
    response = client.get("/static/leaderboard/vendor/chart.umd.min.js")
    assert response.status_code == 200
    assert b"Chart.js v4" in b"".join(response.streaming_content)[:300]


def test_sign_in_page_renders(db, client):
    # allauth's page reads the sign-in providers configured in the database.
    assert client.get("/accounts/login/").status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/runs/99999999999999999999999/",
        "/runs/99999999999999999999999/requests.json",
        "/configs/%00/",
        "/models/%00/",
        "/models/a%00b/",
        "/models/no-such-model/",
        "/hardware/no-such-gpu/",
    ],
)
def test_odd_page_paths_are_404s_not_errors(db, path):
    assert Client(raise_request_exception=False).get(path).status_code == 404


# Odd query strings ----------------------------------------------------------------------------


@pytest.mark.parametrize("query", ODD_QUERIES)
@pytest.mark.parametrize(
    "path",
    ["/hosts/", "/concurrency/", "/categories/", "/submit/", "/model-requests/", "/account/"],
)
@pytest.mark.parametrize("as_user", [True, False], ids=["signed-in", "anonymous"])
def test_odd_query_parameters_never_break_a_page(
    user, models, hardware, enqueued, path, query, as_user
):
    job = services.submit_config(owner=user, data=QUEUED, hardware_slug=hardware.slug)
    client = Client()
    if as_user:
        client.force_login(user)

    assert answers_well(client.get(f"{path}?{query}"))
    assert answers_well(client.get(f"/jobs/{job.pk}/?{query}"))
    assert answers_well(client.get(f"/api/v1/jobs/{job.pk}?{query}"))


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/submit/estimate", {}),
        ("/submit/", {}),
        ("/model-requests/", {"hf_repo": "a/b", "hf_file": "c.gguf"}),
        ("/account/", {"name": "x"}),
        ("/api/v1/model-requests", {"hf_repo": "a/b", "hf_file": "c.gguf"}),
        ("/api/v1/submissions", {"config": json.dumps(QUEUED)}),
    ],
)
def test_writes_from_a_signed_in_browser_need_the_csrf_token(user, path, body):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)

    assert browser.post(path, body).status_code == 403
    assert not ModelRequest.objects.exists()
    assert not ApiToken.objects.filter(user=user).exists()


def cached_keys() -> set[str]:
    """The keys in the tests' per-process cache (LocMemCache)."""
    from django.core.cache import cache

    return set(cache._cache)


def test_made_up_query_values_and_pages_past_the_last_add_nothing_to_the_cache(
    client, two_close_configs
):
    leader, _ = two_close_configs
    asked = [
        ("/", {}),
        ("/", {"page": "1"}),
        ("/best/", {"target": leader.config.target_name}),
        ("/api/v1/drafts", {"target": leader.config.target_name}),
    ]
    for url, query in asked:
        assert client.get(url, query).status_code == 200
    kept = cached_keys()

    for made_up in range(20):
        for url, query in [
            ("/", {"page": str(2 + made_up), "junk": str(made_up)}),
            ("/", {"page": "9" * 18}),
            ("/best/", {"target": f"no-such-{made_up}", "hardware": f"none-{made_up}"}),
            ("/api/v1/drafts", {"target": f"no-such-{made_up}"}),
        ]:
            assert client.get(url, query).status_code == 200

    assert cached_keys() == kept
    # A page past the last shows the last one.
    assert leader.config.label in client.get("/", {"page": "99"}).content.decode()
