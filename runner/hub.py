"""Files on the Hugging Face Hub (or a mirror): resolve, read a GGUF header remotely, download.

This module owns every call the runner makes to a Hub endpoint, all through `huggingface_hub`:
`resolve_hub_file` turns a repository, file and revision into a `HubFile` (the commit, the
file's size and sha256), `read_remote_header` reads a GGUF file's metadata from the first bytes
of the file with HTTP range requests, before anyone downloads it whole, and `download_to`
streams a file into a partial file that a later call resumes. The endpoint is always passed in
(huggingface_hub reads HF_ENDPOINT once, at import time). Plain Python: no Django.

Only plain HTTP is used: huggingface_hub switches to Xet storage when the Hub's answer carries
an `X-Xet-Hash` header, and `download_to` calls the library's `http_get` directly, so a mirror
that advertises Xet is still read over HTTP.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import httpx2
from huggingface_hub import HfApi, HfFileMetadata, RepoFile, get_hf_file_metadata, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import http_get
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status
from huggingface_hub.utils.tqdm import tqdm as hub_tqdm

from runner.errors import ModelCheckError, RunnerError
from runner.gguf.inspect import GGUF_MAGIC, ModelInfo, inspect_prefix

REFERENCE_PREFIX = "hf"
COMMIT = re.compile(r"[0-9a-f]{40}")
SHA256 = re.compile(r"[0-9a-f]{64}")
# A header is read in growing prefixes: 1 MiB first (the tiny fixtures and most headers fit),
# doubled until it parses; a real model's tokenizer makes its header 5-20 MiB.
FIRST_HEADER_BYTES = 1 << 20
MAX_HEADER_BYTES = 256 << 20
STREAM_CHUNK = 1 << 20

DownloadProgress = Callable[[int, int], None]


class HubError(RunnerError):
    """A Hub request failed; `field` names what was wrong (hf_repo, hf_file, revision)."""

    def __init__(self, message: str, *, field: str = "hf_repo") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class HubFile:
    """One file of a Hub repository at one commit, with what it must be once downloaded."""

    repo: str
    file: str
    revision: str
    size_bytes: int
    sha256: str | None
    # Where the bytes are served (the Hub redirects LFS files to its CDN).
    location: str = ""

    @property
    def reference(self) -> str:
        """The config's model reference: `hf/<repo>/<commit>/<file>`, relative to a models dir."""
        return hub_reference(repo=self.repo, file=self.file, revision=self.revision)


def hub_reference(*, repo: str, file: str, revision: str) -> str:
    """The model reference a config uses for a Hub file at a commit."""
    return f"{REFERENCE_PREFIX}/{repo}/{revision}/{file}"


def _api(endpoint: str, token: str | None) -> HfApi:
    return HfApi(endpoint=endpoint.rstrip("/"), token=token or False)


def resolve_hub_file(
    *, repo: str, file: str, revision: str | None, endpoint: str, token: str | None = None
) -> HubFile:
    """Resolve a revision to its commit and read the file's size and sha256 from the Hub."""
    api = _api(endpoint, token)
    commit = _commit(api, repo=repo, revision=revision, endpoint=endpoint)
    entry = _repo_file(api, repo=repo, file=file, commit=commit)
    metadata = _file_metadata(repo=repo, file=file, revision=commit, endpoint=endpoint, token=token)
    size = metadata.size if metadata.size is not None else entry.size
    if entry.lfs is not None and entry.lfs.size != size:
        raise HubError(
            f"{file}: the Hub lists {entry.lfs.size} bytes but serves {size}", field="hf_file"
        )
    return HubFile(
        repo=repo,
        file=file,
        revision=commit,
        size_bytes=int(size),
        sha256=_sha256(entry, metadata),
        location=metadata.location,
    )


def _commit(api: HfApi, *, repo: str, revision: str | None, endpoint: str) -> str:
    """The commit a revision of a repository names, each refusal in one line."""
    try:
        info = api.model_info(repo, revision=revision or None)
    except GatedRepoError:
        raise HubError(
            f"{repo} is gated: accept its terms on the Hub and set SPECBOARD_HF_TOKEN"
        ) from None
    except RevisionNotFoundError:
        raise HubError(
            f"revision {revision!r} does not exist in {repo}", field="revision"
        ) from None
    except RepositoryNotFoundError:
        raise HubError(f"no repository {repo} on {endpoint} (or it is private)") from None
    except HfHubHTTPError as error:
        raise HubError(f"{endpoint} refused {repo}: {_one_line(error)}") from None
    except (OSError, httpx2.HTTPError) as error:
        # No answer at all (refused connection, DNS, timeout): the endpoint, not the input.
        raise HubError(f"cannot reach {endpoint}: {_one_line(error)}") from None
    commit = info.sha or ""
    if not COMMIT.fullmatch(commit):
        raise HubError(f"{endpoint} gave no commit for {repo} at {revision!r}", field="revision")
    return commit


def _repo_file(api: HfApi, *, repo: str, file: str, commit: str) -> RepoFile:
    """The tree listing's entry of a file at a commit."""
    try:
        entries = api.get_paths_info(repo, [file], revision=commit)
    except (OSError, httpx2.HTTPError) as error:
        raise HubError(
            f"cannot list {file} in {repo}: {_one_line(error)}", field="hf_file"
        ) from None
    entry = next((e for e in entries if isinstance(e, RepoFile) and e.path == file), None)
    if entry is None:
        raise HubError(f"{repo} has no file {file} at {commit[:12]}", field="hf_file")
    return entry


def _sha256(entry: RepoFile, metadata: HfFileMetadata) -> str | None:
    """A file's sha256 as the Hub gives it, or None where it must be computed."""
    # LFS files carry their sha256 in the tree listing and as the linked ETag; a file kept in
    # git itself has only its git blob id, and then its sha256 is computed by streaming it.
    sha256 = entry.lfs.sha256 if entry.lfs is not None else None
    if sha256 is None and metadata.etag and SHA256.fullmatch(metadata.etag):
        sha256 = metadata.etag
    return sha256


def locate_hub_file(hub_file: HubFile, *, endpoint: str, token: str | None = None) -> HubFile:
    """Where a registered Hub file is served now (one HEAD request), refusing a file whose size
    or sha256 is no longer what was registered, before a byte of it is downloaded."""
    metadata = _file_metadata(
        repo=hub_file.repo,
        file=hub_file.file,
        revision=hub_file.revision,
        endpoint=endpoint,
        token=token,
    )
    if metadata.size is not None and metadata.size != hub_file.size_bytes:
        raise ModelCheckError(
            f"{hub_file.reference}: the Hub now serves {metadata.size} bytes, "
            f"{hub_file.size_bytes} were registered"
        )
    etag = metadata.etag or ""
    if hub_file.sha256 and SHA256.fullmatch(etag) and etag != hub_file.sha256:
        raise ModelCheckError(
            f"{hub_file.reference}: sha256 mismatch (registered {hub_file.sha256[:16]}…, "
            f"the Hub now gives {etag[:16]}…); refused before downloading it"
        )
    return dataclasses.replace(hub_file, location=metadata.location)


def _file_metadata(
    *, repo: str, file: str, revision: str, endpoint: str, token: str | None
) -> HfFileMetadata:
    url = hf_hub_url(repo, file, revision=revision, endpoint=endpoint.rstrip("/"))
    try:
        return get_hf_file_metadata(url, token=token or False, endpoint=endpoint.rstrip("/"))
    except RemoteEntryNotFoundError:
        raise HubError(f"{repo} has no file {file} at {revision[:12]}", field="hf_file") from None
    except (OSError, httpx2.HTTPError) as error:
        raise HubError(
            f"cannot reach {file} in {repo}: {_one_line(error)}", field="hf_file"
        ) from None


def _headers(token: str | None) -> dict[str, str]:
    headers = build_hf_headers(token=token or False)
    headers["Accept-Encoding"] = "identity"
    return headers


def _read_range(hub_file: HubFile, *, end: int, token: str | None) -> bytes:
    """Bytes 0..end-1 of the file (fewer if the file is shorter), by one range request."""
    headers = _headers(token) | {"Range": f"bytes=0-{end - 1}"}
    chunks, received = [], 0
    try:
        with get_session().stream(
            "GET", hub_file.location, headers=headers, follow_redirects=True
        ) as response:
            hf_raise_for_status(response)
            # A server that ignores Range answers 200 with the whole file: read only what we asked.
            for chunk in response.iter_bytes(STREAM_CHUNK):
                chunks.append(chunk)
                received += len(chunk)
                if received >= end:
                    break
    except (OSError, httpx2.HTTPError) as error:
        raise HubError(
            f"cannot read {hub_file.file}: {_one_line(error)}", field="hf_file"
        ) from None
    return b"".join(chunks)[:end]


def read_remote_header(
    hub_file: HubFile, *, header_copy: Path, token: str | None = None
) -> ModelInfo:
    """Read a remote GGUF file's metadata from its first bytes, growing the range until the
    header parses; the whole file is never needed. Raises ModelCheckError for a non-GGUF or
    truncated file (its tensors must end within the size the Hub gives).

    The bytes read are left in `header_copy`, a sparse file as long as the remote one, so the
    caller can read more of the header with any GGUF reader."""
    wanted = min(FIRST_HEADER_BYTES, hub_file.size_bytes)
    while True:
        prefix = _read_range(hub_file, end=wanted, token=token)
        if len(prefix) < 4 or prefix[:4] != GGUF_MAGIC:
            raise ModelCheckError(f"{hub_file.file} is not a GGUF file (bad magic)")
        if len(prefix) < wanted:
            raise ModelCheckError(
                f"{hub_file.file} is truncated: the Hub gives {hub_file.size_bytes} bytes "
                f"but served only {len(prefix)}"
            )
        info = _parse_prefix(hub_file, prefix, header_copy)
        if info is not None:
            return info
        if wanted >= hub_file.size_bytes:
            raise ModelCheckError(f"{hub_file.file} is truncated or corrupt: no GGUF header fits")
        if wanted >= MAX_HEADER_BYTES:
            raise ModelCheckError(
                f"{hub_file.file}: its GGUF header is larger than {MAX_HEADER_BYTES >> 20} MiB"
            )
        wanted = min(wanted * 2, hub_file.size_bytes, MAX_HEADER_BYTES)


def _parse_prefix(hub_file: HubFile, prefix: bytes, copy: Path) -> ModelInfo | None:
    """The header's ModelInfo, or None if the prefix is too short to hold the whole header.

    The prefix is parsed as the first bytes of a file of the remote size, so every check of a
    local file applies, the tensors ending within the size the Hub gives included. It is also
    written into a sparse file as long as the remote file, for callers that read it again."""
    with open(copy, "wb") as handle:
        handle.write(prefix)
        handle.truncate(hub_file.size_bytes)
    found = inspect_prefix(
        prefix, file_size=hub_file.size_bytes, sha256=hub_file.sha256 or "", path=hub_file.file
    )
    if found is None:
        return None
    info, _ = found
    return dataclasses.replace(info, path=hub_file.reference)


def stream_sha256(hub_file: HubFile, *, token: str | None = None) -> str:
    """The file's sha256, computed by streaming it once without storing it (for files whose
    endpoint gives none); a short stream is a truncated download."""
    digest, received = hashlib.sha256(), 0
    try:
        with get_session().stream(
            "GET", hub_file.location, headers=_headers(token), follow_redirects=True
        ) as response:
            hf_raise_for_status(response)
            for chunk in response.iter_bytes(STREAM_CHUNK):
                digest.update(chunk)
                received += len(chunk)
    except (OSError, httpx2.HTTPError) as error:
        raise HubError(
            f"cannot read {hub_file.file}: {_one_line(error)}", field="hf_file"
        ) from None
    if received != hub_file.size_bytes:
        raise ModelCheckError(
            f"{hub_file.file}: truncated download ({received} of {hub_file.size_bytes} bytes)"
        )
    return digest.hexdigest()


def _progress_bar(callback: DownloadProgress | None, total: int) -> type[hub_tqdm]:
    """A tqdm class for huggingface_hub that reports bytes to `callback` instead of drawing."""

    class Reporter(hub_tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True
            # huggingface_hub's tqdm subclass leaves its __init__ unannotated.
            super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
            self.bytes_done = kwargs.get("initial", 0) or 0

        def update(self, n: float | None = 1) -> bool | None:
            self.bytes_done += int(n or 0)
            if callback is not None:
                callback(self.bytes_done, total)
            return None

    return Reporter


def download_to(
    hub_file: HubFile,
    partial: Path,
    *,
    token: str | None = None,
    progress: DownloadProgress | None = None,
) -> None:
    """Download the file into `partial`, resuming from the bytes already there.

    huggingface_hub's `http_get` asks for the rest with a Range request, and resumes by itself
    when the connection drops mid-file; an interrupted call leaves `partial` for the next one.
    """
    partial.parent.mkdir(parents=True, exist_ok=True)
    partial.touch(exist_ok=True)
    have = partial.stat().st_size
    if have > hub_file.size_bytes:
        partial.write_bytes(b"")
        have = 0
    if progress is not None:
        progress(have, hub_file.size_bytes)
    with open(partial, "r+b") as handle:
        handle.seek(have)
        _http_get(hub_file, handle, have=have, token=token, progress=progress)


def _http_get(
    hub_file: HubFile,
    handle: BinaryIO,
    *,
    have: int,
    token: str | None,
    progress: DownloadProgress | None,
) -> None:
    try:
        http_get(
            hub_file.location,
            handle,
            resume_size=have,
            headers=build_hf_headers(token=token or False),
            expected_size=hub_file.size_bytes,
            displayed_filename=hub_file.file,
            tqdm_class=_progress_bar(progress, hub_file.size_bytes),
        )
    except HfHubHTTPError as error:
        raise ModelCheckError(f"cannot download {hub_file.file}: {_one_line(error)}") from None
    except (OSError, httpx2.HTTPError) as error:
        # http_get's consistency check (the stream ended short), or a connection that kept
        # dropping after its retries: the bytes so far stay in the partial file.
        raise ModelCheckError(f"{hub_file.file}: truncated download ({_one_line(error)})") from None


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())[:300]
