"""POST /api/v1/uploads: a runner result file measured on the user's own GPU, recorded as
self-reported apart from what our workers measured; a file that is not a result, or claims what
its own requests cannot back, is a 400 under `file` and nothing is stored; one too large is a
413."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from leaderboard import services
from leaderboard.models import Config, Hardware, RequestRecord, Run
from tests.support.api_clients import SPECULATIVE, honest_result, upload
from tests.support.results import result_file


def test_a_result_upload_is_recorded_as_self_reported_apart_from_measured(
    signed_in, anonymous, models, hardware, user, enqueued, make_result
):
    job = services.submit_config(owner=user, data=SPECULATIVE, hardware_slug=hardware.slug)
    services.record_result(job_id=job.pk, result=make_result(job.config.key, [100.0, 110.0]))
    result = result_file(make_result, SPECULATIVE, [300.0, 310.0, 320.0])

    response = upload(signed_in, result, hardware="NVIDIA H200", publish_name=True)

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["self_reported"] is True and body["hardware"].endswith("-self-reported")
    run = Run.objects.get(pk=body["runs"][0]["id"])
    assert run.self_reported and run.config.self_reported and run.config != job.config
    assert run.requests.count() == 3 and run.provenance["uploaded_by"] == "ada"
    measured = anonymous.get("/api/v1/leaderboard", {"source": "measured"}).json()["results"]
    assert [row["tokens_per_second"] for row in measured] == [pytest.approx(105.0)]
    reported = anonymous.get("/api/v1/leaderboard", {"source": "self-reported"}).json()["results"]
    assert [row["tokens_per_second"] for row in reported] == [pytest.approx(310.0)]
    assert upload(signed_in, result, hardware="NVIDIA H200").status_code == 409
    assert Run.objects.count() == 2


def test_uploads_need_a_token_and_are_throttled(signed_in, anonymous, make_result, settings, db):
    settings.SPECBOARD_IMPORT_RATE = "2/minute"
    result = result_file(make_result, SPECULATIVE, [300.0, 310.0])
    assert upload(anonymous, result).status_code == 401
    codes = [upload(signed_in, result, hardware=f"GPU {i}").status_code for i in range(3)]
    assert codes == [201, 201, 429]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda r: r.pop("summary"), ["summary"]),
        (lambda r: r.update(schema_version=2), ["schema_version"]),
        (lambda r: r.update(requests="many"), ["requests"]),
        (lambda r: r["requests"][0].update(decode_tokens_per_second="fast"), ["requests"]),
        (lambda r: r["requests"][0].update(prompt_n=-1), ["requests"]),
        (lambda r: r["summary"]["decode_tokens_per_second"].update(mean=-5), ["summary"]),
        (lambda r: r.update(config_key="0000000000000000"), ["config_key"]),
        (lambda r: r["config"].update(n_max=99), ["config"]),
        (lambda r: r.update(surprise=1), ["surprise"]),
        (lambda r: r["engine"].update(release=["b1"]), ["engine"]),
    ],
)
def test_wrongly_shaped_uploads_are_400_with_field_messages(
    signed_in, make_result, db, change, path
):
    result = result_file(make_result, SPECULATIVE, [300.0, 310.0])
    change(result)

    response = upload(signed_in, result)

    assert response.status_code == 400
    errors = response.json()["file"]
    for key in path:
        assert key in errors, errors
    assert not Run.objects.exists() and not Config.objects.exists()


@pytest.mark.parametrize(
    "content", [b"{not json", b"[1, 2]", b'{"a": NaN}', b"\xff\xfe", b"[" * 50_000]
)
def test_unreadable_upload_files_are_400(signed_in, db, content):
    response = upload(signed_in, content)
    assert response.status_code == 400 and response.json()["file"]
    assert not Run.objects.exists()


def test_request_records_stay_with_their_run(signed_in, make_result, db):
    result = result_file(make_result, SPECULATIVE, [300.0, 310.0, 320.0])
    assert upload(signed_in, result).status_code == 201
    assert RequestRecord.objects.count() == 3


def test_an_uploaders_name_is_not_published_unless_they_choose(signed_in, make_result, db):
    hidden = upload(signed_in, result_file(make_result, SPECULATIVE, [300.0, 310.0]))
    shown = upload(
        signed_in,
        result_file(make_result, SPECULATIVE, [200.0, 210.0]),
        "RTX 3090",
        publish_name=True,
    )

    assert hidden.status_code == shown.status_code == 201
    hidden_run = Run.objects.get(pk=hidden.json()["runs"][0]["id"])
    shown_run = Run.objects.get(pk=shown.json()["runs"][0]["id"])
    assert hidden_run.provenance["uploaded_by"] is None
    assert shown_run.provenance["uploaded_by"] == "ada"
    page = Client().get(f"/runs/{hidden_run.pk}/").content.decode()
    # As a word: a random hex key on the page may hold the letters a, d, a (/configs/1adaba8c...).
    assert not re.search(r"\bada\b", page) and "name not published" in page


def test_a_file_claiming_lossless_and_5000_tok_s_over_requests_averaging_395_is_400(
    signed_in, anonymous, make_result
):
    result = honest_result(make_result, [385.0, 395.0, 405.0])
    summary = result["summary"]
    summary["lossless"] = True
    summary["decode_tokens_per_second"]["mean"] = 5000.0

    response = upload(signed_in, result)

    assert response.status_code == 400
    [message] = response.json()["file"]["non_field_errors"]
    assert message == (
        "summary.decode_tokens_per_second.mean is 5000, but the section's measured requests give 395"
    )
    assert not Run.objects.exists()
    assert anonymous.get("/api/v1/leaderboard", {"source": "all"}).json()["count"] == 0


def test_a_file_with_an_honest_summary_claiming_lossless_is_stored_as_unknown(
    signed_in, anonymous, make_result
):
    result = honest_result(make_result, [385.0, 395.0, 405.0])
    # A speedup with no baseline section to derive it from is a claim nothing backs: refused.
    claimed = result | {"summary": result["summary"] | {"lossless": True, "speedup": 7.5}}
    refused = upload(signed_in, claimed)
    assert refused.status_code == 400 and "summary.speedup" in str(refused.json())
    assert not Run.objects.exists()
    result["summary"] |= {"lossless": True}

    response = upload(signed_in, result)

    assert response.status_code == 201, response.json()
    [shown] = response.json()["runs"]
    assert shown["lossless"] is None and shown["speedup"] is None
    assert Run.objects.get(pk=shown["id"]).lossless is None
    detail = anonymous.get(f"/api/v1/runs/{shown['id']}").json()
    assert detail["lossless"] is None and detail["decode_mean"] == pytest.approx(395.0)
    [row] = anonymous.get("/api/v1/leaderboard", {"source": "self-reported"}).json()["results"]
    assert row["lossless"] is None and row["self_reported"] is True


def test_a_file_without_a_measured_request_is_400(signed_in, make_result):
    result = honest_result(make_result, [385.0, 395.0])
    for record in result["requests"]:
        record["phase"] = "warmup"

    response = upload(signed_in, result)

    assert response.status_code == 400
    [message] = response.json()["file"]["non_field_errors"]
    assert "at least one measured request" in message
    assert not Run.objects.exists()


def test_huge_result_uploads_are_413(signed_in, settings):
    settings.SPECBOARD_MAX_IMPORT_BYTES = 1024
    body = {"file": SimpleUploadedFile("r.json", b" " * 4096 + b"{}"), "hardware": "RTX 4090"}
    response = signed_in.post("/api/v1/uploads", body, format="multipart")
    assert response.status_code == 413 and not Run.objects.exists()


@pytest.mark.parametrize(
    ("hardware", "named"),
    [
        ("RTX 4090\u202e0904 XTR", "U+202E"),  # right-to-left override: reads as another GPU
        ("RTX\u200b4090", "U+200B"),  # zero-width space: a second "RTX 4090" kind
        ("\u2067RTX 4090\u2069", "U+2067, U+2069"),  # an isolate and its end
        ("RTX 4090\ufeff", "U+FEFF"),
    ],
)
def test_a_hardware_name_with_hidden_or_reordering_characters_is_refused_and_nothing_stored(
    signed_in, make_result, db, hardware, named
):
    response = upload(signed_in, honest_result(make_result, [100.0, 110.0]), hardware=hardware)

    assert response.status_code == 400
    [message] = response.json()["hardware"]
    assert named in message and "type the name plainly" in message
    assert not Run.objects.exists()
    assert not Hardware.objects.filter(self_reported=True).exists()
    # The same name typed plainly is stored.
    assert upload(signed_in, honest_result(make_result, [100.0, 110.0])).status_code == 201
