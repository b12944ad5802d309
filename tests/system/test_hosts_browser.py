"""The front page's speedup chart, the /hardware/ GPU comparison and /hosts/ in Debian's Chromium,
and a real GPU worker's heartbeat making its host online on /hosts/ (e2e).

The charts must really draw (Chart.js from the site's own static files, no inline script): the
canvas is asked for its painted pixels, as tests/system/test_browser.py does for the others.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from leaderboard import selectors, services
from leaderboard.messaging import broker
from leaderboard.models import Job
from leaderboard.services.board import mark_test_weights
from runner.provenance import cpu_name
from tests.support.measured_configs import measure
from tests.system import test_browser
from tests.system.test_browser import PAINTED_PIXELS, shoot

# The same Chromium and page fixtures as the other browser tests (a page fails on any JS error).
browser = test_browser.browser
page = test_browser.page

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.fixture
def site(transactional_db, user, models, hardware, enqueued, make_result):
    """Three measured configs on an H200 and one on a 4090, and a registered host of the H200."""
    mark_test_weights(models=models.values(), test_weights=False)
    for n_max, decode in ((4, [100.0, 104.0]), (3, [99.0, 103.0]), (2, [60.0, 60.5])):
        measure(user, hardware, make_result, n_max, decode)
    other = services.register_hardware(gpu_name="NVIDIA RTX 4090", memory_bytes=24 * 2**30)
    measure(user, other, make_result, 4, [70.0, 71.0])
    host, _key = services.register_gpu_host(name="lab-a", hardware_slug=hardware.slug)
    queued = services.submit_config(
        owner=user,
        data={"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "runs": 3}},
        hardware_slug=hardware.slug,
    )
    return {"hardware": hardware, "host": host, "queued": queued}


def painted(canvas) -> int:
    canvas.scroll_into_view_if_needed()
    assert canvas.get_attribute("data-drawn") == "true"
    return canvas.evaluate(PAINTED_PIXELS)


@pytest.mark.browser
def test_the_front_chart_and_the_gpu_comparison_draw_and_hosts_show(live_server, page, site):
    page.goto(live_server.url + "/")
    chart = page.locator("#speedup-chart")
    assert painted(chart) > 1000
    assert "Speedup by config" in page.locator("#speedup-chart-title").inner_text()
    shoot(page, "leaderboard-speedup-chart")

    page.goto(live_server.url + "/hardware/")
    assert painted(page.locator("#hardware-tps-chart")) > 1000
    assert painted(page.locator("#hardware-speedup-chart")) > 1000
    assert page.locator("#gpu-comparison-table tbody tr").count() == 2
    shoot(page, "hardware-comparison")

    page.goto(live_server.url + "/hosts/")
    row = page.locator('tr[data-host="lab-a"]')
    assert row.locator("[data-status]").inner_text() in {"offline", "unknown"}
    shoot(page, "hosts")

    queued = site["queued"]
    assert Job.objects.get(pk=queued.pk).status == "queued"
    page.goto(live_server.url + f"/jobs/{queued.pk}/")
    standing = page.locator("#queue-standing")
    assert standing.is_visible() and "position" in standing.inner_text()


@pytest.mark.e2e
def test_a_live_gpu_worker_named_for_its_host_makes_it_online_and_gone_it_is_offline(
    transactional_db, tiny_models
):
    """A real Celery GPU worker on the site's Redis, started as docker-compose and the GPU image
    start it (`python -m leaderboard.messaging.workers gpu SLUG`, named from SPECBOARD_HOST_NAME),
    answers the inspect broadcast: its idle host is online; once it stops, the broker answers
    without it and the quiet host is offline."""
    kind = services.register_hardware(
        gpu_name="CPU hosts", slug=f"hosts-{uuid.uuid4().hex[:8]}", cpu_model=cpu_name()
    )
    host, key = services.register_gpu_host(
        name=f"lab-{uuid.uuid4().hex[:6]}", hardware_slug=kind.slug
    )
    quiet, _ = services.register_gpu_host(
        name=f"lab-{uuid.uuid4().hex[:6]}", hardware_slug=kind.slug
    )
    if broker.live_workers(timeout_s=0.5) is None:
        pytest.skip("the site's broker cannot be asked which workers are alive")
    environment = os.environ | {
        "SPECBOARD_ROLE": "gpu-worker",
        "SPECBOARD_HOST_NAME": host.name,
        "SPECBOARD_HOST_KEY": key,
        "SPECBOARD_MODELS_DIR": str(next(iter(tiny_models.values())).parent),
        "SECRET_KEY": "hosts-test",
    }
    argv = [sys.executable, "-m", "leaderboard.messaging.workers", "gpu", kind.slug]
    worker = subprocess.Popen(argv, env=environment, cwd=REPOSITORY)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            board = selectors.host_board(
                workers=broker.live_workers(timeout_s=1.0), broker_counts=False
            )
            (row,) = [k for k in board["hardware"] if k["slug"] == kind.slug]
            if row["workers_answering"]:
                break
            time.sleep(0.5)
        assert f"gpu@{host.name}" in broker.live_workers(timeout_s=1.0)
        statuses = {h["name"]: h["status"] for h in row["hosts"]}
        assert statuses == {host.name: "online", quiet.name: "offline"}
        (online,) = [h for h in row["hosts"] if h["name"] == host.name]
        assert online["running_job"] is None and "answers on the broker" in online["reason"]
        assert row["workers_answering"] == 1
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    board = selectors.host_board(workers=broker.live_workers(timeout_s=1.0), broker_counts=False)
    (row,) = [k for k in board["hardware"] if k["slug"] == kind.slug]
    assert {h["status"] for h in row["hosts"]} == {"offline"} and row["workers_answering"] == 0
