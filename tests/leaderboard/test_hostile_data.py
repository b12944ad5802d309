"""What the site accepts, it can always show: hostile imports and uploads, then every page.

Each test imports or uploads a hostile file through the public doors (the API and the admin's
web form), then crawls every page and API resource the data touches, following the links a
person would: no response may be a 5xx, and every JSON body must parse as strict JSON."""

from __future__ import annotations

import html
import json
import math
import re
from urllib.parse import urljoin, urlsplit

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from leaderboard import services
from leaderboard.accounts.services import issue_api_token
from leaderboard.models import Config, Hardware, LeaderboardEntry, RequestRecord, Run
from tests.support.results import result_file
from tests.support.seed_kit import SEED_CSV
from tests.support.seed_kit import seed_csv as kit_csv

# Every generated row has two samples, so each run has an interval.
HOSTILE_ROW_DEFAULTS = {"runs": "2", "samples": "[99.0, 101.0]", "sample_tokens": "[700, 710]"}
# Pages that need a login, change state, or are not the data's pages.
NOT_CRAWLED = ("/admin/", "/accounts/", "/api/v1/docs", "/api/v1/schema", "/submit/", "/jobs/")
SPECULATIVE = {
    "target_model": "tiny-qwen3.gguf",
    "draft_model": "tiny-dflash.gguf",
    "spec_types": ["draft-dflash"],
    "n_max": 8,
    "protocol": {"name": "quick", "n_predict": 64, "runs": 3},
}


HOSTILE_RUN_NAMES = [
    "Qwen/Qwen3-8B",
    "Qwen/Qwen3-8B-dflash8",
    "\"quoted\" 'dflash' run",
    "<script>alert(1)</script>-mtp4",
    "Ünïcødé 🚀 ngram 数据",
    "../../etc/passwd-dflash",
    "100% spec, really?#frag",
]


def row_counts() -> dict[str, int]:
    models = (Config, Hardware, LeaderboardEntry, RequestRecord, Run)
    return {model.__name__: model.objects.count() for model in models}


def seed_csv(rows: list[dict]) -> bytes:
    """The rows as a kit file; a row without samples gets two around its own avg_tps, so that
    its figures are its samples' (the import refuses a mean that is not)."""
    shaped = []
    for row in rows:
        try:
            mean = float(row.get("avg_tps", ""))
        except ValueError:
            mean = math.nan
        own = {"samples": json.dumps([mean - 1, mean + 1])} if math.isfinite(mean) else {}
        shaped.append(HOSTILE_ROW_DEFAULTS | own | row)
    return kit_csv(shaped, defaults=HOSTILE_ROW_DEFAULTS)


def strict_json(body: bytes) -> object:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(body, parse_constant=refuse)


@pytest.fixture
def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_api_token(user=user, name='tests').key}")
    return client


@pytest.fixture
def staff(django_user_model) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_superuser(username="root", password="x"))
    return client


@pytest.fixture(autouse=True)
def generous_throttles(settings) -> None:
    settings.SPECBOARD_IMPORT_RATE = "1000/minute"


def post_csv(api: APIClient, content: bytes, hardware: str = "RTX 4090", **fields):
    body = {"file": SimpleUploadedFile("runs.csv", content), "hardware": hardware} | fields
    return api.post("/api/v1/imports", body, format="multipart")


def post_csv_form(staff: Client, content: bytes, hardware: str = "RTX 4090", **fields):
    body = {"file": SimpleUploadedFile("runs.csv", content), "hardware": hardware}
    body |= {"baseline_run_name": "", "target_name": ""} | fields
    return staff.post("/admin/leaderboard/run/import-csv/", body)


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
    response = post_csv(api, seed_csv(rows), hardware='RTX 4090 <b>"quoted"</b> 显卡')
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


@pytest.mark.parametrize(
    ("column", "value", "fragment"),
    [
        ("avg_tps", "1e999", "avg_tps must be a finite, positive number of at most 1e+06"),
        ("median_tps", "nan", "median_tps must be a finite"),
        ("max_tps", "2e6", "max_tps must be a finite"),
        ("total_elapsed_s", "-inf", "total_elapsed_s must be a finite"),
        ("runs", "1e300", "runs must be a finite, positive number of at most 100000"),
        ("runs", "2.5", "runs must be a whole number"),
        ("total_tokens", "99999999999", "total_tokens must be a finite"),
        ("draft_tokens", "1e999", "draft_tokens must be a finite"),
        ("samples", "[1e999, 100]", "samples must be a finite"),
        ("samples", "[NaN, 100]", "samples is not a JSON list of numbers"),
        ("samples", "[Infinity]", "samples is not a JSON list of numbers"),
        ("samples", "[true, 100]", "samples must be a number"),
        ("samples", '["100"]', "samples must be a number"),
        ("samples", "[" * 5000, "samples is not a JSON list of numbers"),
        ("samples", json.dumps([1.0] * 100_001), "samples holds more than 100000 values"),
        ("sample_tokens", "[1e10]", "sample_tokens must be a finite"),
        ("sample_tokens", f"[{'9' * 5000}]", "sample_tokens is not a JSON list of numbers"),
        ("sample_elapsed_s", "[-1]", "sample_elapsed_s must be a finite"),
    ],
)
def test_overflowing_and_out_of_bound_numbers_are_refused_by_line_at_both_doors(
    api, staff, column, value, fragment
):
    rows = [{"run_name": "base", "avg_tps": "70"}, {"run_name": "base-dflash", "avg_tps": "140"}]
    rows[1][column] = value
    content = seed_csv(rows)
    before = row_counts()

    response = post_csv(api, content)
    form = post_csv_form(staff, content)

    assert response.status_code == 400
    assert f"line 3: {fragment}" in " ".join(response.json()["file"])
    assert form.status_code == 200 and f"line 3: {fragment}" in html.unescape(form.content.decode())
    assert row_counts() == before


@pytest.mark.parametrize("column", ["run_name", "model", "prompt_preview", "api"])
def test_nul_characters_in_the_files_text_are_refused_at_both_doors(api, staff, column):
    rows = [{"run_name": "base", "avg_tps": "70"}, {"run_name": "base-dflash", "avg_tps": "140"}]
    rows[1][column] = f"{rows[1].get(column, 'x')}\x00tail"
    content = seed_csv(rows)
    before = row_counts()

    response = post_csv(api, content)
    form = post_csv_form(staff, content)

    assert response.status_code == 400
    assert f"line 3: {column} contains a NUL character" in response.json()["file"]
    assert f"line 3: {column} contains a NUL character" in form.content.decode()
    assert row_counts() == before


@pytest.mark.parametrize("field", ["hardware", "target_name", "baseline_run_name"])
def test_nul_characters_in_the_import_fields_are_refused_at_both_doors(api, staff, field):
    fields = {"hardware": "RTX 4090", field: "base\x00"}
    content = seed_csv([{"run_name": "base", "avg_tps": "70"}])
    before = row_counts()

    response = post_csv(api, content, **fields)
    form = post_csv_form(staff, content, **fields)

    assert response.status_code == 400 and "Null characters" in " ".join(response.json()[field])
    assert "Null characters are not allowed" in form.content.decode()
    assert row_counts() == before
    with pytest.raises(services.CsvImportError) as refused:
        services.import_leaderboard_csv(
            content=content, **{"hardware_name": "RTX 4090"} | _service_names(field)
        )
    assert refused.value.errors == {field: ["must not contain a NUL character"]}
    assert row_counts() == before


def _service_names(field: str) -> dict[str, str]:
    name = {"hardware": "hardware_name"}.get(field, field)
    return {name: "base\x00"}


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


def upload(api: APIClient, result: dict, hardware: str = "RTX 4090"):
    body = {
        "file": SimpleUploadedFile("result.json", json.dumps(result).encode()),
        "hardware": hardware,
    }
    return api.post("/api/v1/uploads", body, format="multipart")


def test_hostile_imports_and_uploads_together_leave_every_page_showing(api, make_result):
    names = [{"run_name": n, "avg_tps": "100", "model": "Qwen/Qwen3-8B"} for n in HOSTILE_RUN_NAMES]
    assert post_csv(api, seed_csv(names), hardware="RTX 4090").status_code == 201
    assert post_csv(api, SEED_CSV.read_bytes(), hardware="RTX 4090").status_code == 201
    good = result_file(make_result, SPECULATIVE, [300.0, 310.0])
    assert upload(api, good, hardware="RTX 4090").status_code == 201
    refused = [
        seed_csv([{"run_name": "x", "avg_tps": "1e999"}]),
        seed_csv([{"run_name": "x\x00", "avg_tps": "70"}]),
        seed_csv([{"run_name": "x", "avg_tps": "70", "samples": "[1e999]"}]),
    ]
    assert [post_csv(api, content).status_code for content in refused] == [400, 400, 400]

    seen = assert_every_page_shows()

    assert len(seen) > 100
    assert not Run.objects.filter(e2e_mean__gt=1e6).exists()
    assert all(
        strict_json(Client().get(f"/api/v1/runs/{pk}").content)
        for pk in Run.objects.values_list("pk", flat=True)
    )


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
