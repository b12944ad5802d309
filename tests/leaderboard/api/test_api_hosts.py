"""GET /api/v1/hosts: each hardware kind with its queue and its hosts' status, never a key."""

from __future__ import annotations


def test_the_hosts_api_lists_each_kind_and_never_a_key(anonymous, host, job_factory):
    job_factory("queued", minute=100)
    response = anonymous.get("/api/v1/hosts")
    assert response.status_code == 200
    body = response.json()
    assert body["online_window_s"] == 900
    (kind,) = body["hardware"]
    assert kind["queued_jobs"] >= 1
    (row,) = kind["hosts"]
    assert row["name"] == "lab-a" and row["status"] in {"offline", "unknown"}
    assert host.key not in response.content.decode()
    assert "key" not in row
