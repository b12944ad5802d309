"""A GPU host's cache of models fetched from the Hugging Face Hub, least recently used out first.

This module owns `ModelCache`: a Hub file registered at a commit (`runner.hub.HubFile`) is
downloaded on first use into `<root>/hf/<repo>/<commit>/<file>`, the path its config reference
`hf/<repo>/<commit>/<file>` names relative to the root, so a benchmark runs on it with the
root as its models directory. A download resumes from its partial file; the size and sha256
are checked before the file takes its place, so no engine ever starts on wrong bytes. Past the
cache's byte budget the least recently used files go, never one in use (a shared `flock` on the
file while a benchmark runs; eviction takes an exclusive one or skips the file). Plain Python.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from runner.errors import ModelCheckError
from runner.gguf.inspect import sha256_file
from runner.hub import (
    REFERENCE_PREFIX,
    DownloadProgress,
    HubFile,
    download_to,
    locate_hub_file,
)

logger = logging.getLogger(__name__)

PARTIAL_SUFFIX = ".part"


@dataclass(frozen=True)
class CacheEntry:
    """One file in the cache (a finished download or a partial one)."""

    path: Path
    size_bytes: int
    last_used: float


def _try_lock(handle: IO[bytes], kind: int) -> bool:
    try:
        fcntl.flock(handle.fileno(), kind | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise
    return True


class ModelCache:
    """Hub files downloaded on demand under `root`, evicted past `max_bytes` (0: no limit)."""

    def __init__(
        self, root: Path, *, endpoint: str, max_bytes: int = 0, token: str | None = None
    ) -> None:
        self.root = Path(root)
        self.endpoint = endpoint
        self.max_bytes = max_bytes
        self.token = token

    @property
    def files_dir(self) -> Path:
        """The folder the cache owns: only files in it are ever evicted."""
        return self.root / REFERENCE_PREFIX

    def path_for(self, hub_file: HubFile) -> Path:
        """Where a Hub file lives once fetched (its config reference, under the root)."""
        path = (self.root / hub_file.reference).resolve()
        if not path.is_relative_to(self.files_dir.resolve()):
            raise ModelCheckError(f"model reference {hub_file.reference!r} leaves the cache")
        return path

    def entries(self) -> list[CacheEntry]:
        """Every file in the cache, least recently used first."""
        if not self.files_dir.is_dir():
            return []
        found = []
        for path in self.files_dir.rglob("*"):
            if path.is_file() and not path.is_symlink():
                stat = path.stat()
                found.append(CacheEntry(path, stat.st_size, stat.st_atime))
        return sorted(found, key=lambda entry: entry.last_used)

    def fetch(self, hub_file: HubFile, *, progress: DownloadProgress | None = None) -> Path:
        """The cached file, downloaded (or resumed) first if needed; size and sha256 checked."""
        final = self.path_for(hub_file)
        if final.is_file():
            self._check(final, hub_file)
            self.touch(final)
            return final
        if self.max_bytes and hub_file.size_bytes > self.max_bytes:
            raise ModelCheckError(
                f"{hub_file.file} is {hub_file.size_bytes} bytes, more than the model cache "
                f"holds (SPECBOARD_MODEL_CACHE_BYTES={self.max_bytes})"
            )
        partial = final.with_name(final.name + PARTIAL_SUFFIX)
        partial.parent.mkdir(parents=True, exist_ok=True)
        with open(partial, "ab") as lock:
            # One download per file: a second worker waits here, then finds the file in place.
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            if final.is_file():
                self._check(final, hub_file)
                self.touch(final)
                return final
            try:
                if not hub_file.location:
                    hub_file = locate_hub_file(hub_file, endpoint=self.endpoint, token=self.token)
                have = partial.stat().st_size
                self.evict(room_for=hub_file.size_bytes - have, keep={partial})
                download_to(hub_file, partial, token=self.token, progress=progress)
            except BaseException:
                # Bytes received stay for the next attempt to resume from; an empty file goes.
                if partial.exists() and partial.stat().st_size == 0:
                    partial.unlink()
                raise
            try:
                self._check(partial, hub_file)
            except ModelCheckError:
                # Wrong bytes are never resumed from: the next attempt starts over.
                partial.unlink(missing_ok=True)
                raise
            os.replace(partial, final)
        self.touch(final)
        logger.info("fetched %s into the model cache", hub_file.reference)
        return final

    def _check(self, path: Path, hub_file: HubFile) -> None:
        size = path.stat().st_size
        if size != hub_file.size_bytes:
            raise ModelCheckError(
                f"{hub_file.reference}: truncated download ({size} of {hub_file.size_bytes} bytes)"
            )
        if hub_file.sha256 and (found := sha256_file(path)) != hub_file.sha256:
            raise ModelCheckError(
                f"{hub_file.reference}: sha256 mismatch (registered {hub_file.sha256[:16]}…, "
                f"downloaded {found[:16]}…): the file on the Hub changed; refused before any engine"
            )

    @staticmethod
    def touch(path: Path) -> None:
        """Mark a file as just used (its access time; the modification time stays)."""
        stat = path.stat()
        os.utime(path, ns=(time.time_ns(), stat.st_mtime_ns))

    @contextlib.contextmanager
    def in_use(self, path: Path) -> Iterator[Path]:
        """Hold a file while a benchmark reads it: eviction skips it until the block ends."""
        with open(path, "rb") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
            # Evicted between our open and our lock: the path no longer names this file.
            if not path.exists() or os.stat(path).st_ino != os.fstat(handle.fileno()).st_ino:
                raise ModelCheckError(f"{path} was evicted from the model cache while opening it")
            self.touch(path)
            yield path

    def evict(self, *, room_for: int = 0, keep: set[Path] | None = None) -> list[Path]:
        """Delete least recently used files until `room_for` more bytes fit in the budget;
        files in use (or being downloaded) and those in `keep` stay. Returns what went."""
        if not self.max_bytes:
            return []
        keep = {path.resolve() for path in keep or set()}
        entries = self.entries()
        total = sum(entry.size_bytes for entry in entries)
        evicted: list[Path] = []
        for entry in entries:
            if total + room_for <= self.max_bytes:
                break
            if entry.path.resolve() in keep or not self._delete_unused(entry.path):
                continue
            total -= entry.size_bytes
            evicted.append(entry.path)
            logger.info("evicted %s from the model cache", entry.path)
        return evicted

    @staticmethod
    def _delete_unused(path: Path) -> bool:
        try:
            handle = open(path, "rb")
        except FileNotFoundError:
            return False
        with handle:
            if not _try_lock(handle, fcntl.LOCK_EX):
                return False
            path.unlink(missing_ok=True)
        return True


ProgressSink = Callable[[dict[str, Any]], None]


def download_progress(send: ProgressSink, *, every_s: float = 1.0) -> DownloadProgress:
    """A download callback that sends `{"phase": "downloading", ...}` progress events, at most
    one every `every_s` seconds besides the first and the last."""
    last_sent = [float("-inf")]

    def report(downloaded: int, total: int) -> None:
        now = time.monotonic()
        if downloaded < total and now - last_sent[0] < every_s:
            return
        last_sent[0] = now
        send({"phase": "downloading", "downloaded_bytes": downloaded, "total_bytes": total})

    return report
