"""The GPU host's model cache: fetch with the real huggingface_hub from a local Hub, resume after
a dropped connection or an interrupted call, refuse wrong bytes, evict least recently used."""

from __future__ import annotations

import hashlib
import os
import re

import huggingface_hub.constants
import pytest

from runner.errors import ModelCheckError
from runner.hub import HubFile, resolve_hub_file
from runner.model_cache import ModelCache, download_progress
from tests.support.hub_server import HubServer

REPO = "tiny-org/tiny-GGUF"
NAMES = ("tiny-qwen3.gguf", "tiny-mtp.gguf", "tiny-dflash.gguf")


@pytest.fixture
def hub(tiny_models):
    with HubServer() as server:
        server.commit(REPO, {name: tiny_models[name] for name in NAMES})
        yield server


@pytest.fixture
def small_chunks(monkeypatch):
    # huggingface_hub writes what it received in chunks of this size (10 MB by default, more
    # than a tiny file): small chunks let a dropped connection leave bytes to resume from.
    monkeypatch.setattr(huggingface_hub.constants, "DOWNLOAD_CHUNK_SIZE", 64 * 1024)


def registered(hub: HubServer, name: str) -> HubFile:
    """A file as the web host registered it: commit, size and sha256, no download location."""
    found = resolve_hub_file(repo=REPO, file=name, revision="main", endpoint=hub.endpoint)
    return HubFile(
        repo=found.repo,
        file=found.file,
        revision=found.revision,
        size_bytes=found.size_bytes,
        sha256=found.sha256,
    )


def cache_in(tmp_path, hub: HubServer, **kwargs) -> ModelCache:
    return ModelCache(tmp_path / "cache", endpoint=hub.endpoint, **kwargs)


def test_a_registered_file_is_fetched_once_with_progress_and_then_served_from_the_cache(
    tmp_path, hub, tiny_models
):
    cache = cache_in(tmp_path, hub)
    wanted = registered(hub, "tiny-qwen3.gguf")
    events: list[dict] = []

    path = cache.fetch(wanted, progress=download_progress(events.append, every_s=0))
    again = cache.fetch(wanted)

    assert path == again == tmp_path / "cache" / wanted.reference
    assert path.read_bytes() == tiny_models["tiny-qwen3.gguf"].read_bytes()
    assert len(hub.cdn_gets()) == 1  # the second fetch downloaded nothing
    assert events[0] == {
        "phase": "downloading",
        "downloaded_bytes": 0,
        "total_bytes": path.stat().st_size,
    }
    assert events[-1]["downloaded_bytes"] == events[-1]["total_bytes"] == wanted.size_bytes


def test_a_connection_dropped_halfway_is_resumed_with_a_range_request(
    tmp_path, hub, tiny_models, small_chunks
):
    wanted = registered(hub, "tiny-qwen3.gguf")
    hub.drops_left, hub.drop_after_bytes = 1, wanted.size_bytes // 2

    path = cache_in(tmp_path, hub).fetch(wanted)

    first, second = hub.cdn_gets()
    assert first.range is None
    resumed_from = int(re.fullmatch(r"bytes=(\d+)-", second.range)[1])
    assert 0 < resumed_from <= wanted.size_bytes // 2
    assert hashlib.sha256(path.read_bytes()).hexdigest() == wanted.sha256


def test_an_interrupted_download_resumes_from_its_partial_file(tmp_path, hub, tiny_models):
    cache = cache_in(tmp_path, hub)
    wanted = registered(hub, "tiny-qwen3.gguf")
    content = tiny_models["tiny-qwen3.gguf"].read_bytes()
    partial = cache.path_for(wanted).with_name("tiny-qwen3.gguf.part")
    partial.parent.mkdir(parents=True)
    partial.write_bytes(content[:300_000])  # what a killed worker left

    path = cache.fetch(wanted)

    (get,) = hub.cdn_gets()
    assert get.range == "bytes=300000-"
    assert path.read_bytes() == content and not partial.exists()


def test_bytes_whose_sha256_differs_from_the_registered_file_are_refused(
    tmp_path, hub, tiny_models
):
    cache = cache_in(tmp_path, hub)
    wanted = registered(hub, "tiny-qwen3.gguf")
    # The CDN serves other bytes of the same size under the registered file's address.
    content = bytearray(tiny_models["tiny-qwen3.gguf"].read_bytes())
    content[-1] ^= 0xFF
    hub._blobs[wanted.sha256] = bytes(content)

    with pytest.raises(ModelCheckError, match="sha256 mismatch"):
        cache.fetch(wanted)

    assert not cache.path_for(wanted).exists()
    assert cache.entries() == []  # not even a partial file to resume wrong bytes from


def test_a_file_whose_hub_sha256_changed_is_refused_before_downloading(tmp_path, hub, tiny_models):
    cache = cache_in(tmp_path, hub)
    wanted = registered(hub, "tiny-qwen3.gguf")
    hub.replace_content(
        REPO, wanted.revision, "tiny-qwen3.gguf", tiny_models["tiny-mtp.gguf"].read_bytes()
    )

    with pytest.raises(ModelCheckError):
        cache.fetch(wanted)

    assert hub.cdn_gets() == [] and cache.entries() == []


def test_a_short_download_is_a_truncated_download(tmp_path, hub):
    cache = cache_in(tmp_path, hub)
    wanted = registered(hub, "tiny-qwen3.gguf")
    hub.truncate_to = wanted.size_bytes - 1000

    with pytest.raises(ModelCheckError, match="truncated download"):
        cache.fetch(wanted)

    assert not cache.path_for(wanted).exists()


def test_least_recently_used_files_are_evicted_past_the_budget_but_never_one_in_use(tmp_path, hub):
    files = {name: registered(hub, name) for name in NAMES}
    sizes = {name: hub_file.size_bytes for name, hub_file in files.items()}
    # Room for the two largest files, not for all three.
    cache = cache_in(tmp_path, hub, max_bytes=sum(sizes.values()) - min(sizes.values()) + 1)
    qwen = cache.fetch(files["tiny-qwen3.gguf"])
    mtp = cache.fetch(files["tiny-mtp.gguf"])
    os.utime(qwen, (1_000, qwen.stat().st_mtime))  # used long ago
    os.utime(mtp, (2_000, mtp.stat().st_mtime))

    with cache.in_use(qwen):  # a benchmark reads it: it stays, the next oldest goes
        dflash = cache.fetch(files["tiny-dflash.gguf"])
        assert qwen.exists() and dflash.exists() and not mtp.exists()

    # Nothing in use now: the least recently used goes first.
    os.utime(qwen, (1_000, qwen.stat().st_mtime))
    mtp = cache.fetch(files["tiny-mtp.gguf"])
    assert not qwen.exists() and mtp.exists() and dflash.exists()
    assert sum(entry.size_bytes for entry in cache.entries()) <= cache.max_bytes


def test_a_file_larger_than_the_cache_is_refused(tmp_path, hub):
    wanted = registered(hub, "tiny-qwen3.gguf")

    with pytest.raises(ModelCheckError, match="more than the model cache holds"):
        cache_in(tmp_path, hub, max_bytes=wanted.size_bytes - 1).fetch(wanted)

    assert hub.cdn_gets() == []
