"""The API's root: /api/v1/ and /api/ list every collection with a link that answers."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_the_api_root_links_every_collection_and_the_schema(client):
    response = client.get("/api/v1/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    body = response.json()
    names = {resource["name"] for resource in body["resources"]}
    assert {"leaderboard", "configs", "runs", "submissions", "hosts"} <= names
    assert body["schema"].endswith("/api/v1/schema/")
    assert body["docs"].endswith("/api/v1/docs/")


def test_every_link_of_the_api_root_answers_without_a_server_error(client):
    body = client.get("/api/v1/", HTTP_ACCEPT="application/json").json()
    for resource in body["resources"]:
        response = client.get(resource["url"], HTTP_ACCEPT="application/json")
        # Write-only collections answer 405 or 401/403 to an anonymous GET, and those that need
        # a query (compare's keys, drafts' target) a 400 naming it; none breaks.
        assert response.status_code in {200, 400, 401, 403, 405}, (
            resource["name"],
            response.status_code,
        )
        if response.status_code == 400:
            assert set(response.json()) <= {"keys", "target"}, resource["name"]


def test_api_without_a_version_leads_to_the_root_not_to_a_list_of_url_patterns(client, settings):
    settings.DEBUG = True
    response = client.get("/api/", follow=True, HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert "resources" in response.json()
    assert b"URLconf" not in response.content
