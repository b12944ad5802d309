"""The leaderboard's cached first pages, gzipped for the clients that accept it
(`leaderboard.compression`): the same bytes once decompressed, compressed once per kept body,
`Vary: Accept-Encoding` either way, and never a signed-in visitor's page (it holds a token)."""

from __future__ import annotations

import gzip
import pickle

import pytest
from django.test import RequestFactory

from leaderboard import compression
from tests.support.measured_configs import measure

BROWSER = "gzip, deflate, br, zstd"


@pytest.mark.parametrize(
    ("header", "accepted"),
    [
        ("gzip", True),
        (BROWSER, True),
        ("GZip;q=0.5", True),
        ("x-gzip", True),
        ("*", True),
        ("br, *;q=0.1", True),
        ("", False),
        ("identity", False),
        ("deflate, br", False),
        ("gzip;q=0", False),
        ("gzip;q=0.000", False),
        ("gzip;q=zero", False),
        ("*;q=0", False),
        ("gzip;q=0, *", False),  # named and refused: the wildcard does not take it back
    ],
)
def test_accept_encoding_is_read_with_its_weights(header, accepted):
    request = RequestFactory().get("/", HTTP_ACCEPT_ENCODING=header)
    assert compression.accepts_gzip(request) is accepted


def test_a_body_is_gzipped_once_and_keeps_its_gzip_through_the_shared_cache(monkeypatch):
    calls = []
    real = gzip.compress
    monkeypatch.setattr(gzip, "compress", lambda *a, **k: calls.append(1) or real(*a, **k))
    body = compression.Body(b'{"rows": []}' * 100)
    assert body.gzipped() is body.gzipped() and len(calls) == 1
    assert gzip.decompress(body.gzipped()) == body.content
    again = pickle.loads(pickle.dumps(body))
    assert again.content == body.content and again.gzipped() == body.gzipped()
    assert len(calls) == 1  # its gzip came with it


@pytest.fixture
def board(user, ranked_models, hardware, make_result):
    measure(user, hardware, make_result, 4, [100.0, 104.0])
    measure(user, hardware, make_result, 8, [120.0, 118.0])


@pytest.mark.parametrize("address", ["/api/v1/leaderboard", "/api/v1/leaderboard?page=1", "/"])
def test_the_first_pages_are_the_same_bytes_gzipped_for_a_client_that_accepts_it(
    client, board, address, monkeypatch
):
    plain = client.get(address)
    calls = []
    real = gzip.compress
    monkeypatch.setattr(gzip, "compress", lambda *a, **k: calls.append(1) or real(*a, **k))
    packed = client.get(address, HTTP_ACCEPT_ENCODING=BROWSER)
    again = client.get(address, HTTP_ACCEPT_ENCODING="gzip")

    assert plain.status_code == packed.status_code == 200
    assert "Content-Encoding" not in plain and packed["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in plain["Vary"] and "Accept-Encoding" in packed["Vary"]
    assert gzip.decompress(packed.content) == plain.content
    assert len(packed.content) < len(plain.content) / 3
    assert again.content == packed.content and len(calls) == 1  # compressed once, then kept
    assert int(packed["Content-Length"]) == len(packed.content)


def test_an_api_page_answered_uncached_is_gzipped_too(client, board):
    # An unknown parameter is answered uncached (it cannot fill the cache): still compressed.
    address = "/api/v1/leaderboard?junk=1"
    packed = client.get(address, HTTP_ACCEPT_ENCODING="gzip")
    assert packed["Content-Encoding"] == "gzip"
    assert gzip.decompress(packed.content) == client.get(address).content


def test_a_signed_in_visitors_page_is_never_compressed(client, user, board):
    # It holds a CSRF token (the sign-out form): its compressed length must not be on the wire.
    # A visitor who is not signed in gets no token to compress.
    assert b"csrfmiddlewaretoken" not in client.get("/").content
    client.force_login(user)
    page = client.get("/", HTTP_ACCEPT_ENCODING=BROWSER)
    assert page.status_code == 200 and "Content-Encoding" not in page
    assert b"csrfmiddlewaretoken" in page.content
    anonymous = client.get("/api/v1/leaderboard", HTTP_ACCEPT_ENCODING=BROWSER)
    assert anonymous["Content-Encoding"] == "gzip"  # the API's page is everyone's
