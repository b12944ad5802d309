"""A local Hugging Face Hub for tests: the routes huggingface_hub calls, over real HTTP.

`HubServer` serves repositories of files (the runner's tiny GGUF fixtures) in the Hub's layout:
model info by revision (`/api/models/<repo>[/revision/<rev>]`), the tree listing of paths
(`POST /api/models/<repo>/paths-info/<rev>`) and `/<repo>/resolve/<rev>/<file>`. As on the Hub,
an LFS file's resolve answers 302 to a CDN (a second port, so huggingface_hub does not follow
it for metadata) with `X-Repo-Commit`, `X-Linked-Etag` (the sha256) and `X-Linked-Size`; a file
kept in git answers 200 with its git blob id as ETag. Misses answer 404 with the Hub's
`X-Error-Code` (RepoNotFound, RevisionNotFound, EntryNotFound) so huggingface_hub raises its own
typed errors. Range requests are honoured (resume, header reads), and the CDN can be told to
drop connections halfway. Nothing advertises Xet (no `X-Xet-Hash`), so downloads stay on HTTP.
`closed_port` gives the port of a Hub that is not there.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit


def closed_port() -> int:
    """A local port nothing listens on (bound, then released): a Hub that does not answer."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _git_blob_id(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class Repo:
    """A model repository: commits of files, branch and tag names pointing at commits."""

    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    lfs: bool = True


@dataclass
class Request:
    method: str
    path: str
    range: str | None


class HubServer:
    """A threaded local Hub and its CDN; `endpoint` is what HF_ENDPOINT would be."""

    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.requests: list[Request] = []
        # CDN GETs still to cut off, and after how many body bytes.
        self.drops_left = 0
        self.drop_after_bytes = 0
        # Serve fewer bytes than the listing says (a truncated upload).
        self.truncate_to: int | None = None
        self._lock = threading.Lock()
        self._hub = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(cdn=False))
        self._cdn = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(cdn=True))
        self._blobs: dict[str, bytes] = {}
        self._threads = [
            threading.Thread(target=server.serve_forever, daemon=True)
            for server in (self._hub, self._cdn)
        ]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._hub.server_address[1]}"

    @property
    def cdn(self) -> str:
        return f"http://127.0.0.1:{self._cdn.server_address[1]}"

    def start(self) -> HubServer:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        for server in (self._hub, self._cdn):
            server.shutdown()
            server.server_close()

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def commit(
        self, repo_id: str, files: dict[str, bytes | Path], *, ref: str = "main", lfs: bool = True
    ) -> str:
        """Add a commit holding `files` (bytes or paths to read) and point `ref` at it."""
        contents = {
            name: data if isinstance(data, bytes) else Path(data).read_bytes()
            for name, data in files.items()
        }
        repo = self.repos.setdefault(repo_id, Repo(lfs=lfs))
        digest = hashlib.sha1(repr((repo_id, len(repo.commits), sorted(contents))).encode())
        for name in sorted(contents):
            digest.update(hashlib.sha256(contents[name]).digest())
        sha = digest.hexdigest()
        with self._lock:
            repo.commits[sha] = contents
            repo.refs[ref] = sha
            for content in contents.values():
                self._blobs[hashlib.sha256(content).hexdigest()] = content
        return sha

    def replace_content(self, repo_id: str, revision: str, name: str, content: bytes) -> None:
        """Change a file's bytes in place (what a broken mirror does): the sha256 changes."""
        with self._lock:
            self.repos[repo_id].commits[revision][name] = content
            self._blobs[hashlib.sha256(content).hexdigest()] = content

    def cdn_gets(self) -> list[Request]:
        return [r for r in self.requests if r.method == "GET" and r.path.startswith("/cdn/")]

    # The handler -------------------------------------------------------------------------

    def _handler(self, *, cdn: bool) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base's name
                pass

            def _record(self) -> None:
                with hub._lock:
                    hub.requests.append(Request(self.command, self.path, self.headers.get("Range")))

            def do_HEAD(self) -> None:
                self._record()
                (hub._cdn_file if cdn else hub._route)(self, body=False)

            def do_GET(self) -> None:
                self._record()
                (hub._cdn_file if cdn else hub._route)(self, body=True)

            def do_POST(self) -> None:
                self._record()
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                hub._paths_info(self, form)

        return Handler

    def _error(self, handler, code: str, message: str, status: int = 404) -> None:
        body = json.dumps({"error": message}).encode()
        handler.send_response(status)
        handler.send_header("X-Error-Code", code)
        handler.send_header("X-Error-Message", message)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)

    def _json(self, handler, payload: object) -> None:
        body = json.dumps(payload).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _lookup(self, handler, repo_id: str, revision: str) -> tuple[Repo, str] | None:
        repo = self.repos.get(repo_id)
        if repo is None:
            self._error(handler, "RepoNotFound", "Repository not found")
            return None
        sha = revision if revision in repo.commits else repo.refs.get(revision)
        if sha is None:
            self._error(handler, "RevisionNotFound", f"Invalid rev id: {revision}")
            return None
        return repo, sha

    _INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)(?:/revision/(?P<rev>[^/?]+))?$")
    _PATHS = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/paths-info/(?P<rev>[^/?]+)$")
    _RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")

    def _route(self, handler, *, body: bool) -> None:
        path = unquote(urlsplit(handler.path).path)
        raw = urlsplit(handler.path).path
        if match := self._INFO.match(raw):
            found = self._lookup(handler, unquote(match["repo"]), unquote(match["rev"] or "main"))
            if found:
                repo, sha = found
                siblings = [{"rfilename": name} for name in sorted(repo.commits[sha])]
                self._json(
                    handler,
                    {"id": match["repo"], "modelId": match["repo"], "sha": sha,
                     "private": False, "siblings": siblings},
                )  # fmt: skip
            return
        if match := self._RESOLVE.match(path):
            self._resolve(handler, match["repo"], match["rev"], match["file"], body=body)
            return
        self._error(handler, "RepoNotFound", "Repository not found")

    def _paths_info(self, handler, form: dict[str, list[str]]) -> None:
        match = self._PATHS.match(urlsplit(handler.path).path)
        if match is None:
            self._error(handler, "RepoNotFound", "Repository not found")
            return
        found = self._lookup(handler, unquote(match["repo"]), unquote(match["rev"]))
        if not found:
            return
        repo, sha = found
        files = repo.commits[sha]
        listed = []
        for name in form.get("paths", []):
            if name not in files:
                continue  # the Hub leaves out paths that do not exist
            content = files[name]
            entry = {
                "type": "file",
                "path": name,
                "size": len(content),
                "oid": _git_blob_id(content),
            }
            if repo.lfs:
                entry["lfs"] = {
                    "oid": hashlib.sha256(content).hexdigest(),
                    "size": len(content),
                    "pointerSize": 134,
                }
            listed.append(entry)
        self._json(handler, listed)

    def _resolve(self, handler, repo_id: str, revision: str, name: str, *, body: bool) -> None:
        found = self._lookup(handler, repo_id, revision)
        if not found:
            return
        repo, sha = found
        content = repo.commits[sha].get(name)
        if content is None:
            self._error(handler, "EntryNotFound", f"{name} does not exist on {revision}")
            return
        if repo.lfs:
            sha256 = hashlib.sha256(content).hexdigest()
            handler.send_response(302)
            handler.send_header("Location", f"{self.cdn}/cdn/{sha256}")
            handler.send_header("X-Repo-Commit", sha)
            handler.send_header("ETag", f'"{_git_blob_id(content)}"')
            handler.send_header("X-Linked-Etag", f'"{sha256}"')
            handler.send_header("X-Linked-Size", str(len(content)))
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        extra = {"X-Repo-Commit": sha, "ETag": f'"{_git_blob_id(content)}"'}
        self._send_bytes(handler, content, body=body, extra=extra)

    def _cdn_file(self, handler, *, body: bool) -> None:
        digest = urlsplit(handler.path).path.removeprefix("/cdn/")
        content = self._blobs.get(digest)
        if content is None:
            handler.send_response(404)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        self._send_bytes(handler, content, body=body, extra={"ETag": f'"{digest}"'})

    def _send_bytes(self, handler, content: bytes, *, body: bool, extra: dict[str, str]) -> None:
        if self.truncate_to is not None:
            content = content[: self.truncate_to]
        start, end = 0, len(content) - 1
        requested = handler.headers.get("Range")
        if requested and (match := re.fullmatch(r"bytes=(\d+)-(\d*)", requested)):
            start = int(match[1])
            end = min(int(match[2]), end) if match[2] else end
            handler.send_response(206)
            handler.send_header("Content-Range", f"bytes {start}-{end}/{len(content)}")
        else:
            handler.send_response(200)
        chunk = content[start : end + 1]
        for key, value in extra.items():
            handler.send_header(key, value)
        handler.send_header("Accept-Ranges", "bytes")
        handler.send_header("Content-Length", str(len(chunk)))
        handler.end_headers()
        if not body:
            return
        with self._lock:
            drop = self.drops_left > 0 and len(chunk) > self.drop_after_bytes
            if drop:
                self.drops_left -= 1
        if drop:
            # Half a body, then the connection goes: the client sees a short read.
            handler.wfile.write(chunk[: self.drop_after_bytes])
            handler.wfile.flush()
            handler.close_connection = True
            return
        handler.wfile.write(chunk)
