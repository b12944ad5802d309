"""The one page cache (`leaderboard.web.page_cache`): a page served whole from the cache with one
read of its rankings' versions, computed again at once when a run is recorded in a ranking it shows
and kept when one is recorded elsewhere; ETag and 304, the Surrogate-Key of its rankings, gzip for
the pages that hold no secret, never a signed-in visitor's page for anyone else, and made-up query
strings that leave the cache as it was. The tests measure on the tiny models cleared of their
test-weights mark (ranked_models): test-weight rows never enter the ranking."""

from __future__ import annotations

import gzip
import threading

import pytest
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard import services
from leaderboard.models import LeaderboardEntry
from leaderboard.views import board as board_view
from tests.support.measured_configs import measure
from tests.support.seed_kit import SEED_CSV

BROWSER = "gzip, deflate, br, zstd"
PAGES = ("/", "/api/v1/leaderboard")


def served(client, url: str, **extra) -> tuple[object, list[str]]:
    """The response to `url` and the SQL it cost."""
    with CaptureQueriesContext(connection) as read:
        response = client.get(url, **extra)
    return response, [query["sql"] for query in read.captured_queries]


def kept_entries() -> int:
    return len(caches["pages"]._cache)  # the pages' per-process cache (LocMemCache)


@pytest.fixture
def board(user, ranked_models, hardware, make_result):
    """One draft measured beside its baseline, ranked."""
    measure(user, hardware, make_result, 4, [100.0, 104.0])


@pytest.mark.parametrize("url", PAGES)
def test_a_page_is_served_from_the_cache_with_one_read_of_its_rankings_versions(client, board, url):
    first, computed = served(client, url)
    again, read = served(client, url)

    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert any("leaderboard_leaderboardentry" in sql for sql in computed)
    [versions] = read
    assert "leaderboard_rankingversion" in versions


@pytest.mark.parametrize("url", PAGES)
def test_a_run_recorded_in_a_ranking_the_page_shows_changes_it_at_once(
    client, user, board, hardware, make_result, url
):
    assert b"102.00" in client.get(url).content or b"102.0" in client.get(url).content

    measure(user, hardware, make_result, 4, [150.0, 154.0])

    page = client.get(url).content
    assert b"152.0" in page and b"102.0" not in page


def test_a_run_recorded_in_another_ranking_leaves_the_page_as_it_was_kept(
    client, user, ranked_models, hardware, make_result
):
    other = services.register_hardware(gpu_name="RTX 4090", memory_bytes=24 * 2**30)
    measure(user, hardware, make_result, 4, [100.0, 104.0])
    measure(user, other, make_result, 4, [60.0, 62.0])
    url = f"/api/v1/leaderboard?hardware={hardware.slug}"
    first = client.get(url)
    assert [row["tokens_per_second"] for row in first.json()["results"]] == [102.0]

    # A faster batch of the other GPU's row: its ranking changes, not this page's.
    measure(user, other, make_result, 4, [80.0, 82.0])
    again, read = served(client, url)
    assert again.content == first.content and again["ETag"] == first["ETag"]
    assert len(read) == 1
    assert client.get(f"/api/v1/leaderboard?hardware={other.slug}").json()["results"][0][
        "tokens_per_second"
    ] == pytest.approx(81.0)

    # The page's own ranking changes: it is computed again.
    measure(user, hardware, make_result, 4, [150.0, 154.0])
    assert client.get(url).json()["results"][0]["tokens_per_second"] == 152.0


def test_a_page_is_kept_on_a_board_whose_versions_predate_the_every_change_key(client, board):
    # A database whose rankings were raised before "board" existed (or seeded in bulk).
    from leaderboard.models import RankingVersion

    RankingVersion.objects.filter(key="board").delete()
    client.get("/api/v1/leaderboard")
    _, read = served(client, "/api/v1/leaderboard")
    assert len(read) == 1


def test_a_change_made_while_a_page_is_computed_is_not_hidden_by_the_page_kept(
    client, board, monkeypatch
):
    ranking = LeaderboardEntry.objects.get(rank__isnull=False).ranking_key
    real = board_view.fastest_drafts

    def changed_meanwhile():
        # Another process records a run in the page's ranking while this one computes it.
        services.raise_board_version(rankings=[ranking])
        return real()

    monkeypatch.setattr(board_view, "fastest_drafts", changed_meanwhile)
    client.get("/")
    monkeypatch.setattr(board_view, "fastest_drafts", real)

    _, computed = served(client, "/")
    assert any("leaderboard_leaderboardentry" in sql for sql in computed)
    _, kept = served(client, "/")
    assert len(kept) == 1


def test_while_one_request_computes_a_page_again_the_others_are_served_it_as_it_was(
    client, user, board, hardware, make_result
):
    url = "/api/v1/leaderboard"
    before = client.get(url).content
    measure(user, hardware, make_result, 4, [150.0, 154.0])
    # Another request (in any process) holds the mark for computing it again.
    pages = caches["pages"]
    [page_key] = [key.split(":", 2)[2] for key in pages._cache if ":page:" in key]
    assert pages.add(f"{page_key}:computing", True, 10)

    assert client.get(url).content == before
    pages.delete(f"{page_key}:computing")
    assert b"152.0" in client.get(url).content


@pytest.mark.parametrize("url", PAGES)
def test_a_kept_page_has_an_etag_and_a_client_that_holds_it_gets_304(client, board, url):
    first = client.get(url)
    etag = first["ETag"]
    assert etag.startswith('"') and "public" in first["Cache-Control"]
    assert "max-age=0" in first["Cache-Control"]

    unchanged = client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert unchanged.status_code == 304 and unchanged.content == b""
    assert unchanged["ETag"] == etag

    assert client.get(url, HTTP_IF_NONE_MATCH='"something else"').status_code == 200


def test_the_surrogate_key_names_the_rankings_the_page_shows(client, board):
    page = client.get("/api/v1/leaderboard")
    shown = {row.ranking_key for row in LeaderboardEntry.objects.filter(rank__isnull=False)}
    assert shown
    # Its rows' rankings, and the keys every board page shows: a change that named no ranking
    # ("*") and rows that came or went ("row-set").
    assert set(page["Surrogate-Key"].split()) == shown | {"*", "row-set"}

    front = set(client.get("/")["Surrogate-Key"].split())
    assert shown | {"*", "row-set"} <= front


def test_a_signed_in_visitor_never_gets_the_anonymous_page_nor_the_reverse(client, user, board):
    anonymous = client.get("/")
    assert b"Sign in" in anonymous.content and b"Sign out" not in anonymous.content

    client.force_login(user)
    mine = client.get("/", HTTP_ACCEPT_ENCODING=BROWSER)
    assert user.get_username().encode() in mine.content and b"Sign out" in mine.content
    assert "private" in mine["Cache-Control"] and "Surrogate-Key" not in mine
    # It holds a CSRF token (the sign-out form): its compressed length must not be on the wire.
    assert b"csrfmiddlewaretoken" in mine.content and "Content-Encoding" not in mine

    client.logout()
    again = client.get("/")
    assert again.content == anonymous.content
    assert user.get_username().encode() not in again.content


@pytest.mark.parametrize("url", PAGES)
def test_a_page_that_holds_no_secret_is_gzipped_for_a_client_that_accepts_it(client, board, url):
    plain = client.get(url)
    packed = client.get(url, HTTP_ACCEPT_ENCODING=BROWSER)
    again = client.get(url, HTTP_ACCEPT_ENCODING="gzip")

    assert "Content-Encoding" not in plain and packed["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in plain["Vary"] and "Accept-Encoding" in packed["Vary"]
    assert gzip.decompress(packed.content) == plain.content
    assert again.content == packed.content  # the kept gzip, not compressed again
    assert packed["ETag"] != plain["ETag"]


def test_made_up_query_strings_leave_the_cache_as_it_was(client, board):
    for url in PAGES:
        client.get(url)
    client.get("/api/v1/leaderboard", {"ordering": "tau"})
    settled = kept_entries()

    for index in range(50):
        assert client.get("/", {f"junk{index}": "x"}).status_code == 200
        assert client.get("/", {"target": f"no-such-{index}"}).status_code == 200
        assert client.get("/", {"page": str(1000 + index)}).status_code == 200
        assert client.get("/", {"q": f"term {index}"}).status_code == 200
        assert client.get("/api/v1/leaderboard", {f"junk{index}": "x"}).status_code == 200
        assert client.get("/api/v1/leaderboard", {"target": f"no-such-{index}"}).status_code == 200
        assert client.get("/api/v1/leaderboard", {"search": f"term {index}"}).status_code == 200
    assert kept_entries() == settled


def test_a_page_asked_with_parameters_it_does_not_read_is_the_kept_page(client, board):
    kept = client.get("/")
    # Served from the page kept for the plain address, not computed for the junk one (whose
    # own links would name it).
    junk, read = served(client, "/?utm_source=newsletter")
    assert junk.content == kept.content and len(read) == 1


def test_within_the_version_window_a_kept_page_costs_no_query_and_a_change_shows_after_it(
    client, user, board, hardware, make_result, settings
):
    settings.SPECBOARD_BOARD_VERSION_SECONDS = 60
    url = "/api/v1/leaderboard"
    kept = client.get(url).content
    assert client.get(url).content == kept  # reads the versions: trusted from here on
    again, read = served(client, url)
    assert again.content == kept and read == []

    measure(user, hardware, make_result, 4, [150.0, 154.0])
    assert client.get(url).content == kept  # the versions this process read are trusted a while
    settings.SPECBOARD_BOARD_VERSION_SECONDS = 0  # the window has passed
    assert b"152.0" in client.get(url).content


@pytest.mark.django_db(transaction=True)
def test_a_page_out_of_date_is_served_as_it_was_while_a_thread_computes_it_again(
    client, user, board, hardware, make_result, settings
):
    # Committed rows: the thread reads them on a connection of its own.
    settings.SPECBOARD_PAGES_REFRESH_BEHIND = True
    url = "/api/v1/leaderboard"
    kept = client.get(url).content
    measure(user, hardware, make_result, 4, [150.0, 154.0])

    assert client.get(url).content == kept  # served at once, as it was
    [computing] = [t for t in threading.enumerate() if t.name == f"page {url}"]
    computing.join(timeout=30)
    assert not computing.is_alive()
    page, read = served(client, url)
    assert b"152.0" in page.content and len(read) == 1  # computed behind: this one is a hit


def test_the_kept_off_rows_keep_the_front_page_under_one_key_raised_when_one_of_them_changes(
    client, board
):
    # The kept-off rows are in no ranking's order: the page is kept under KEPT_OFF, not under
    # the rankings they belong to, and a change to one of them computes it again.
    services.import_leaderboard_csv(content=SEED_CSV.read_bytes(), hardware_name="RTX PRO 6000")
    flagged = LeaderboardEntry.objects.filter(self_reported=True).select_related(
        "config", "hardware"
    )[0]
    first = client.get("/")
    assert "kept-off" in first["Surrogate-Key"].split()
    assert flagged.ranking_key not in first["Surrogate-Key"].split()
    assert len(served(client, "/")[1]) == 1  # kept

    services.refresh_leaderboard_entry(
        config=flagged.config, hardware=flagged.hardware, engine_release=flagged.engine_release
    )
    again, read = served(client, "/")
    assert len(read) > 1  # computed again


def test_where_processes_share_a_cache_one_computes_a_page_and_the_others_take_its_copy(
    client, user, board, hardware, make_result, monkeypatch
):
    from django.core.cache.backends.locmem import LocMemCache

    from leaderboard.web import page_cache

    shared = LocMemCache("shared-between-processes", {})  # Redis, as deployed
    monkeypatch.setattr(page_cache, "_shared", lambda: shared)
    url = "/api/v1/leaderboard"
    computed = client.get(url).content
    caches["pages"].clear()  # another process, which has not computed it
    taken, read = served(client, url)
    assert taken.content == computed and len(read) == 1  # the versions, then the copy

    measure(user, hardware, make_result, 4, [150.0, 154.0])
    assert b"152.0" in client.get(url).content  # this process computes the new version
    caches["pages"].clear()
    taken, read = served(client, url)
    assert b"152.0" in taken.content and len(read) == 1
    shared.clear()
