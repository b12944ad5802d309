"""What the site accepts, it can always show: the seed kit's file and hostile imports and uploads,
then every page.

Each test imports or uploads a file through the API (the seed kit's own, names of slashes,
quotes, markup and unicode, figures the import refuses), then crawls every page and API resource
the data touches, following the links a person would: no response may be a 5xx, and every JSON
body must parse as strict JSON. This spans the whole site by design; what each door refuses is
tested beside it (tests/leaderboard/api/, services/test_community_imports.py)."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import urljoin, urlsplit

import pytest
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.models import Config, Hardware, LeaderboardEntry, Run
from tests.support.api_clients import SPECULATIVE, post_csv, row_counts, token_client, upload
from tests.support.results import result_file
from tests.support.seed_kit import SEED_CSV, seed_csv_with_samples

# Pages that need a login, change state, or are not the data's pages.
NOT_CRAWLED = ("/admin/", "/accounts/", "/api/v1/docs", "/api/v1/schema", "/submit/", "/jobs/")


HOSTILE_RUN_NAMES = [
    "Qwen/Qwen3-8B",
    "Qwen/Qwen3-8B-dflash8",
    "\"quoted\" 'dflash' run",
    "<script>alert(1)</script>-mtp4",
    "Ünïcødé 🚀 ngram 数据",
    "../../etc/passwd-dflash",
    "100% spec, really?#frag",
]


def strict_json(body: bytes) -> object:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(body, parse_constant=refuse)


@pytest.fixture
def api(user) -> APIClient:
    """The test user's token client."""
    return token_client(user)


@pytest.fixture(autouse=True)
def generous_throttles(settings) -> None:
    settings.SPECBOARD_IMPORT_RATE = "1000/minute"


def data_urls() -> list[str]:
    """Every page and API resource of the stored data, beside the links the crawl will find."""
    keys = list(Config.objects.values_list("key", flat=True))
    urls = [
        "/", "/?all=1", "/models/", "/hardware/", "/context/", "/nmax/", "/best/",
        f"/compare/?keys={','.join(keys[:4])}", f"/api/v1/compare?keys={','.join(keys[:4])}",
        "/api/v1/leaderboard", "/api/v1/leaderboard?source=self-reported&include_retired=true",
        "/api/v1/configs", "/api/v1/runs", "/api/v1/hardware", "/api/v1/models",
        "/api/v1/exports/leaderboard.csv", "/api/v1/exports/leaderboard.json",
    ]  # fmt: skip
    for key in keys:
        urls += [f"/configs/{key}/", f"/api/v1/configs/{key}"]
    for pk in Run.objects.values_list("pk", flat=True):
        urls += [f"/runs/{pk}/", f"/runs/{pk}/requests.csv", f"/runs/{pk}/requests.json"]
        urls += [f"/api/v1/runs/{pk}", f"/api/v1/runs?config={Run.objects.get(pk=pk).config.key}"]
        urls += [f"/api/v1/exports/runs/{pk}/requests.{kind}" for kind in ("csv", "json")]
    for slug in Hardware.objects.values_list("slug", flat=True):
        urls += [f"/hardware/{slug}/", f"/best/?hardware={slug}", f"/context/?hardware={slug}"]
    return urls


def crawl(start: list[str]) -> dict[str, int]:
    """GET every URL and every same-site link of every page, as a browser resolves them."""
    client = Client(raise_request_exception=False)
    seen: dict[str, int] = {}
    queue = list(dict.fromkeys(start))
    while queue and len(seen) < 2000:
        url = queue.pop(0)
        if url in seen or url.startswith(NOT_CRAWLED):
            continue
        response = client.get(url)
        seen[url] = response.status_code
        kind = response.get("Content-Type", "")
        if "json" in kind and response.status_code < 500:
            strict_json(response.content)
        if kind.startswith("text/html"):
            for href in re.findall(r'href="([^"]+)"', response.content.decode()):
                # urljoin removes dot segments the way a browser does.
                link = urlsplit(urljoin(f"http://testserver{url}", html.unescape(href)))
                if link.netloc == "testserver" and not link.path.startswith("/static/"):
                    queue.append(link.path + (f"?{link.query}" if link.query else ""))
    return seen


def assert_every_page_shows(start: list[str] | None = None) -> dict[str, int]:
    seen = crawl(data_urls() + (start or []))
    failures = {url: code for url, code in seen.items() if code >= 500}
    assert failures == {}
    return seen


def page_text(url: str) -> str:
    response = Client().get(url)
    assert response.status_code == 200, url
    return re.sub(r"\s+", " ", html.unescape(response.content.decode()))


def test_the_seed_kit_file_shows_on_every_page_with_the_seeds_figures(api):
    response = post_csv(
        api, SEED_CSV.read_bytes(), hardware="NVIDIA RTX PRO 6000 Blackwell 96GB", publish_name=True
    )
    assert response.status_code == 201, response.json()

    seen = assert_every_page_shows()

    dflash15 = LeaderboardEntry.objects.get(config__label="qwen36-dflash15")
    assert all(seen[f"/runs/{run.pk}/"] == 200 for run in Run.objects.all())
    assert seen[f"/configs/{dflash15.config.key}/"] == 200
    page = page_text(f"/configs/{dflash15.config.key}/")
    assert "253.21" in page and "3.60×" in page and "protocol seed kit CSV (unverified)" in page
    baseline = page_text(f"/configs/{dflash15.config.baseline.key}/")
    assert "70.34" in baseline
    run_page = page_text(f"/runs/{dflash15.best_run_id}/")
    assert "seed kit CSV (unverified)" in run_page and "uploaded by ada" in run_page
    row = strict_json(Client().get(f"/api/v1/configs/{dflash15.config.key}").content)
    assert row["protocol"] == "seed-csv"
    board = strict_json(Client().get("/api/v1/leaderboard?source=self-reported").content)
    figures = {r["label"]: r for r in board["results"]}
    assert round(figures["qwen36-dflash15"]["tokens_per_second"], 2) == 253.21
    assert round(figures["qwen36-dflash15"]["speedup"], 2) == 3.60


def test_names_with_slashes_quotes_markup_and_unicode_show_and_link(api):
    rows = [
        {"run_name": name, "model": "Qwen/Qwen3-8B", "avg_tps": str(70 + 10 * i)}
        for i, name in enumerate(HOSTILE_RUN_NAMES)
    ]
    rows[0]["prompt_preview"] = "<img src=x onerror=alert(1)> «prompt» ✓"
    response = post_csv(api, seed_csv_with_samples(rows), hardware='RTX 4090 <b>"quoted"</b> 显卡')
    assert response.status_code == 201, response.json()
    for target in ("../../etc/passwd", "50% off?#x"):
        other = post_csv(api, SEED_CSV.read_bytes(), hardware="显卡", target_name=target)
        assert other.status_code == 201, other.json()

    seen = assert_every_page_shows()

    model_links = re.findall(r'href="(/models/[^"]+)"', Client().get("/models/").content.decode())
    assert len(model_links) == 3
    assert all(
        seen[urlsplit(urljoin("http://testserver/", link)).path] == 200 for link in model_links
    )
    assert "<h1>50% off?#x</h1>" in page_text("/models/50%2525%20off%3F%23x/")
    assert seen["/models/Qwen/Qwen3-8B/"] == 200
    assert "Qwen/Qwen3-8B" in page_text("/models/Qwen/Qwen3-8B/")
    # The crawl resolved the link as a browser would: the dot segments survived, escaped.
    assert seen["/models/%252E%252E/%252E%252E/etc/passwd/"] == 200
    assert "<h1>../../etc/passwd</h1>" in page_text("/models/%252E%252E/%252E%252E/etc/passwd/")
    for url in ("/", "/models/Qwen/Qwen3-8B/", "/hardware/"):
        body = Client().get(url).content.decode()
        assert "<script>alert(1)</script>" not in body and "<b>" not in body
    labels = page_text("/?all=1")
    assert all(name in labels for name in HOSTILE_RUN_NAMES)
    assert Hardware.objects.filter(gpu_name='RTX 4090 <b>"quoted"</b> 显卡').exists()


def test_an_upload_whose_depth_points_carry_strings_is_refused_and_the_pages_still_show(
    api, make_result
):
    good = result_file(make_result, SPECULATIVE, [300.0, 310.0])
    assert upload(api, good).status_code == 201
    hostile = result_file(make_result, SPECULATIVE, [300.0, 310.0])
    hostile["points"] = [
        {
            "input_tokens": "4096",
            "output_tokens": "many",
            "decode_tokens_per_second": {"n": "2", "mean": "fast"},
            "acceptance_rate": None,
            "tau": None,
            "speedup": "3x",
        }
    ]
    before = row_counts()

    response = upload(api, hostile)

    assert response.status_code == 400 and "points" in response.json()["file"]
    assert row_counts() == before
    seen = assert_every_page_shows(["/context/?target=tiny-qwen3"])
    assert seen["/context/"] == 200


def test_hostile_imports_and_uploads_together_leave_every_page_showing(api, make_result):
    names = [{"run_name": n, "avg_tps": "100", "model": "Qwen/Qwen3-8B"} for n in HOSTILE_RUN_NAMES]
    assert post_csv(api, seed_csv_with_samples(names), hardware="RTX 4090").status_code == 201
    assert post_csv(api, SEED_CSV.read_bytes(), hardware="RTX 4090").status_code == 201
    good = result_file(make_result, SPECULATIVE, [300.0, 310.0])
    assert upload(api, good, hardware="RTX 4090").status_code == 201
    refused = [
        seed_csv_with_samples([{"run_name": "x", "avg_tps": "1e999"}]),
        seed_csv_with_samples([{"run_name": "x\x00", "avg_tps": "70"}]),
        seed_csv_with_samples([{"run_name": "x", "avg_tps": "70", "samples": "[1e999]"}]),
    ]
    assert [post_csv(api, content).status_code for content in refused] == [400, 400, 400]

    seen = assert_every_page_shows()

    assert len(seen) > 100
    assert not Run.objects.filter(e2e_mean__gt=1e6).exists()
    assert all(
        strict_json(Client().get(f"/api/v1/runs/{pk}").content)
        for pk in Run.objects.values_list("pk", flat=True)
    )
