"""What every page does: render without data, answer HEAD as GET, carry a strict content
security policy with no inline script, draw its charts with the Chart.js served from the site's
own static files, and sign-in renders; an odd or unknown page path is a 404, never an error."""

from __future__ import annotations

import re

import pytest
from django.test import Client


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
