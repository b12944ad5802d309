"""The terminal client of a Specboard site: submit a config and follow its job, or upload a result
measured on your own GPU, through the site's REST API (/api/v1/, docs/API.md).

`python -m runner submit CONFIG.json --site URL [--hardware SLUG] [--wait]` and
`python -m runner upload RESULT.json --site URL --hardware NAME` (runner/cli.py).
The token comes from `SPECBOARD_TOKEN` or `~/.config/specboard/client.toml` (`site = "..."` and
`token = "..."`), or from `--token`, which wins but is warned about: a command line is in the
process list, which every user of the machine can read. It is sent only in the Authorization
header and never printed. An API error is shown as the one line the API gives, and the command
exits non-zero.
"""

from __future__ import annotations

import json
import os
import sys
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx

from runner.errors import RunnerError

TOKEN_VARIABLE = "SPECBOARD_TOKEN"
SITE_VARIABLE = "SPECBOARD_SITE"
CONFIG_FILE = Path("~/.config/specboard/client.toml")
TOKEN_FLAG_WARNING = (
    "warning: --token puts the key in this machine's process list, which every local user can "
    f'read (ps, /proc); set {TOKEN_VARIABLE} or put token = "..." in {CONFIG_FILE} '
    "(chmod 600) instead"
)
API_PREFIX = "/api/v1"
FINISHED = ("succeeded", "failed", "cancelled")
BAR_WIDTH = 30


# A JSON object as the API sends or answers it (docs/API.md); the client reads it leniently.
JsonObject = dict[str, Any]

# While following a job, this many failed polls in a row (the site restarting, a proxy's 502)
# are waited out before the client gives up.
TRANSIENT_RETRIES = 5


class ClientError(RunnerError):
    """The site refused a request, could not be reached, or the client is missing a setting."""

    def __init__(self, message: str, *, status: int | None = 0) -> None:
        super().__init__(message)
        # The HTTP status of a refusal; None when the site could not be reached at all.
        self.status = status

    @property
    def transient(self) -> bool:
        return self.status is None or self.status >= 500


@dataclass(frozen=True)
class Credentials:
    """Where the site is and the token for it; the token never appears in a repr."""

    site: str
    token: str = field(repr=False)


def config_file_path(environ: Mapping[str, str] | None = None) -> Path:
    """~/.config/specboard/client.toml under this environment's HOME."""
    home = (os.environ if environ is None else environ).get("HOME") or str(Path.home())
    return Path(str(CONFIG_FILE).replace("~", home, 1))


def _read_config_file(path: Path) -> dict[str, str]:
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ClientError(f"cannot read {path}: {error}") from None
    unknown = set(data) - {"site", "token"}
    if unknown or not all(isinstance(value, str) for value in data.values()):
        raise ClientError(f"{path} may hold only the strings site and token")
    return data


def resolve_credentials(
    *, site: str | None, token: str | None, environ: Mapping[str, str] | None = None
) -> Credentials:
    """The site and token from the flags, else the environment, else the config file."""
    environ = os.environ if environ is None else environ
    path = config_file_path(environ)
    stored = _read_config_file(path)
    site = site or environ.get(SITE_VARIABLE) or stored.get("site")
    token = token or environ.get(TOKEN_VARIABLE) or stored.get("token")
    if not site:
        raise ClientError(f"no site: give --site URL, set {SITE_VARIABLE}, or put site in {path}")
    if not token:
        raise ClientError(
            f"no token: give --token, set {TOKEN_VARIABLE}, or put token in {path} "
            "(make one on the site's /account/ page)"
        )
    site = site.strip().rstrip("/")
    if site.endswith(API_PREFIX):
        site = site[: -len(API_PREFIX)]
    if not site.startswith(("http://", "https://")):
        raise ClientError(f"the site must be an http:// or https:// URL, not {site!r}")
    return Credentials(site=site, token=token.strip())


def _flatten(errors: Any, path: str = "") -> list[str]:
    if isinstance(errors, dict):
        return [
            line
            for key, value in errors.items()
            for line in _flatten(
                value, path if key in ("detail", "non_field_errors") else f"{path}{key}."
            )
        ]
    if isinstance(errors, list):
        return [line for item in errors for line in _flatten(item, path)]
    return [f"{path[:-1]}: {errors}" if path else str(errors)]


def api_message(response: httpx.Response) -> str:
    """The API's error as one line: its `detail`, or each field's messages after the field name."""
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code} {response.reason_phrase} from {response.url.path}"
    lines = _flatten(body)
    return "; ".join(line.replace("\n", " ") for line in lines) or f"HTTP {response.status_code}"


class SpecboardClient:
    """The few API calls the terminal client makes, each answering the API's JSON."""

    def __init__(
        self,
        credentials: Credentials,
        *,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.site = credentials.site
        self._http = httpx.Client(
            base_url=credentials.site + API_PREFIX,
            headers={"Authorization": f"Token {credentials.token}", "Accept": "application/json"},
            timeout=timeout_s,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> JsonObject:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise ClientError(f"cannot reach {self.site}: {error}", status=None) from None
        if response.is_error:
            raise ClientError(api_message(response), status=response.status_code)
        if response.is_redirect:
            # An http:// site behind https, or a moved site: say where, never follow it with
            # the token.
            where = response.headers.get("Location", "")
            raise ClientError(
                f"{self.site} redirected {response.url.path} to {where!r}: give the site's own "
                "address as --site",
                status=response.status_code,
            )
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise ClientError(
                f"{self.site} answered {response.url.path} with HTTP {response.status_code} "
                "but not a JSON object: is it a Specboard site?",
                status=response.status_code,
            )
        return body

    def submit(self, *, config: JsonObject, hardware: str | None) -> JsonObject:
        body: dict[str, Any] = {"config": config}
        if hardware:
            body["hardware"] = hardware
        return self._call("POST", "/submissions", json=body)

    def job(self, job_id: int) -> JsonObject:
        return self._call("GET", f"/jobs/{job_id}")

    def run(self, run_id: int) -> JsonObject:
        return self._call("GET", f"/runs/{run_id}")

    def upload(self, *, result: Path, hardware: str, publish_name: bool) -> JsonObject:
        with result.open("rb") as file:
            return self._call(
                "POST",
                "/uploads",
                files={"file": (result.name, file, "application/json")},
                data={"hardware": hardware, "publish_name": "true" if publish_name else "false"},
            )

    def follow(
        self,
        job: JsonObject,
        *,
        poll_s: float,
        show: Callable[[JsonObject], None],
        timeout_s: float,
    ) -> JsonObject:
        """Poll the job until it finishes, showing each new state; the finished job."""
        deadline = time.monotonic() + timeout_s
        job_id = job["id"]
        while job["status"] not in FINISHED:
            if time.monotonic() > deadline:
                raise ClientError(f"job {job['id']} is still {job['status']} after {timeout_s} s")
            time.sleep(poll_s)
            job = self.patiently(lambda: self.job(job_id), pause_s=poll_s)
            show(job)
        return job

    def patiently(self, fetch: Callable[[], JsonObject], *, pause_s: float) -> JsonObject:
        """`fetch()`, waiting out up to TRANSIENT_RETRIES failures that may pass (5xx, no answer)."""
        for attempt in range(TRANSIENT_RETRIES + 1):
            try:
                return fetch()
            except ClientError as error:
                if not error.transient or attempt == TRANSIENT_RETRIES:
                    raise
                time.sleep(pause_s)
        raise AssertionError("unreachable")


def read_json_file(path: str, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ClientError(f"{what} file not found: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ClientError(f"{what} file {path} is not valid JSON: {error}") from None


def state_line(job: JsonObject) -> str:
    """What a job is doing, in words: queued (and where), the phase and its requests, or done."""
    status = job["status"]
    progress = job.get("progress") or {}
    if status == "queued":
        position = job.get("queue_position")
        return f"job {job['id']} queued" + (f", position {position}" if position else "")
    if status == "running":
        done, total = progress.get("done"), progress.get("total")
        phase = progress.get("phase") or "running"
        counts = f" {done}/{total} requests" if total else ""
        return f"job {job['id']} {phase}{counts}"
    return f"job {job['id']} {status}"


def progress_bar(job: JsonObject, width: int = BAR_WIDTH) -> str:
    """A one-line bar from the job's done/total (its percent), with the state after it."""
    progress = job.get("progress") or {}
    percent = progress.get("percent")
    if percent is None and progress.get("total"):
        percent = 100.0 * (progress.get("done") or 0) / progress["total"]
    if job["status"] == "succeeded":
        percent = 100.0
    filled = round(width * (percent or 0.0) / 100.0)
    return f"[{'#' * filled}{'-' * (width - filled)}] {percent or 0.0:5.1f}% {state_line(job)}"


class ProgressDisplay:
    """A redrawn bar on a terminal; elsewhere one line per change of state."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.last = ""

    def __call__(self, job: JsonObject) -> None:
        if self.tty:
            line = progress_bar(job)
            self.stream.write("\r" + line.ljust(len(self.last)))
            if job["status"] in FINISHED:
                self.stream.write("\n")
        else:
            line = state_line(job)
            if line != self.last:
                self.stream.write(line + "\n")
        self.stream.flush()
        self.last = line


def _number(value: Any, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def interval_text(low: Any, high: Any, n: Any) -> str:
    """A run's 95% interval as the site shows it: none below two requests, and a lower end below
    0 (a speed is never negative) shown as 0 with why."""
    if low is None or high is None or (n or 0) < 2:
        return "no interval"
    if low < 0:
        return f"95% CI 0.00–{_number(high)} (too few requests to place the mean)"
    return f"95% CI {_number(low)}–{_number(high)}"


def result_row(run: JsonObject, site: str) -> str:
    """The run as the leaderboard shows it, in one line, with its flags and its page."""
    prefix = "e2e" if run.get("tps_definition") == "end-to-end" else "decode"
    interval = interval_text(
        run.get(f"{prefix}_ci95_low"), run.get(f"{prefix}_ci95_high"), run.get("n")
    )
    parts = [
        f"run {run['id']}: config {run['config_key']} on {run['hardware']}",
        f"{_number(run.get('tokens_per_second'))} tok/s ({run.get('tps_definition')}, "
        f"n={run.get('n')}, {interval})",
    ]
    if run.get("speedup") is not None:
        parts.append(f"speedup {run['speedup']:.2f}x")
    if run.get("acceptance_rate") is not None:
        parts.append(f"acceptance {100 * run['acceptance_rate']:.1f}%")
    if run.get("tau") is not None:
        parts.append(f"tau {run['tau']:.2f}")
    if run.get("lossless") is not None:
        parts.append(f"lossless {str(run['lossless']).lower()}")
    # What the board's badges say (the run detail's "verdicts"): test weights, noisy, anecdotal.
    verdicts = run.get("verdicts")
    found: dict[str, Any] = verdicts if isinstance(verdicts, dict) else {}
    if found.get("flags"):
        parts.append("flags: " + ", ".join(found["flags"]))
    if found.get("evidence_note"):
        parts.append(found["evidence_note"])
    return ", ".join(parts) + f" — {site}/runs/{run['id']}/"


def submit(
    *,
    credentials: Credentials,
    config_path: str,
    hardware: str | None,
    wait: bool,
    poll_s: float = 5.0,
    wait_timeout_s: float = 7 * 24 * 3600.0,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Submit a config; with `wait`, follow its job and print the result row. The exit status."""
    config = read_json_file(config_path, "config")
    client = SpecboardClient(credentials)
    try:
        job = client.submit(config=config, hardware=hardware)
        budget = job.get("token_budget") or {}
        out.write(
            f"job {job['id']} {job['status']}: config {job['config_key']} on {job['hardware']}"
            + (f", about {budget['total_tokens']:,} tokens" if budget else "")
            + f" — {credentials.site}/jobs/{job['id']}/\n"
        )
        out.flush()
        if not wait:
            return 0
        display = ProgressDisplay(err)
        display(job)
        job = client.follow(job, poll_s=poll_s, show=display, timeout_s=wait_timeout_s)
        if job["status"] != "succeeded":
            reason = f": {job['error'].splitlines()[0]}" if job.get("error") else ""
            raise ClientError(f"job {job['id']} {job['status']}{reason}")
        run = client.patiently(lambda: client.run(job["run_id"]), pause_s=poll_s)
        out.write(result_row(run, credentials.site) + "\n")
        return 0
    finally:
        client.close()


def upload(
    *,
    credentials: Credentials,
    result_path: str,
    hardware: str,
    publish_name: bool = False,
    out: TextIO = sys.stdout,
) -> int:
    """Upload a runner result file as self-reported; prints each recorded run's row."""
    path = Path(result_path)
    read_json_file(result_path, "result")  # a clear local error for a file that is not JSON
    client = SpecboardClient(credentials)
    try:
        report = client.upload(result=path, hardware=hardware, publish_name=publish_name)
    finally:
        client.close()
    out.write(
        f"uploaded {path.name} as self-reported on {report['hardware']}: "
        f"{len(report['runs'])} run(s)\n"
    )
    for run in report["runs"]:
        out.write(result_row(run, credentials.site) + "\n")
    return 0
