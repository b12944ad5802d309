"""Start, watch and always stop one llama-server process for one config.

This module owns the llama-server command line (``server_argv``) and the process
(``LlamaServer``). Only argument lists reach the process (never a shell). The server listens on
127.0.0.1 on a free port; its log goes to a file whose tail is attached to every error.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import httpx

from runner.config import ENGINE_DEFAULT_SPLIT_MODE, BenchmarkConfig
from runner.engines.build import Engine
from runner.errors import EngineBuildError, EngineCrashedError, EngineTimeoutError

LOG_TAIL_BYTES = 4000
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: on Linux, get SIGKILL when the process that started us dies.

    A worker killed mid-run (SIGKILL, OOM) must not leave llama-server holding the GPU.
    """
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_argv(
    config: BenchmarkConfig,
    *,
    engine: Engine,
    target_path: Path,
    draft_path: Path | None,
    port: int,
    slots: int = 1,
) -> list[str]:
    """The exact llama-server command line for a config (flag names of llama.cpp b11434).

    ``slots`` is -np: llama-server splits -c across its slots, so -c is the config's context for
    that many slots (``BenchmarkConfig.context_for_slots``; one slot: the whole context)."""
    argv = [
        engine.server_path,
        "-m",
        str(target_path),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        str(config.context_for_slots(slots)),
        "-np",
        str(slots),
        "--metrics",
        "--no-webui",
        "-fa",
        config.flash_attn,
        "-ctk",
        config.cache_type_k,
        "-ctv",
        config.cache_type_v,
    ]
    if config.n_gpu_layers is not None:
        argv += ["-ngl", str(config.n_gpu_layers)]
    argv += gpu_placement_argv(config, engine=engine)
    if config.threads is not None:
        argv += ["-t", str(config.threads)]
    if config.effective_backend_sampling:
        argv.append("-bs")
    if engine.avoids_amx_repack:
        # AMX kernels crash on quantized weights there (runner.engines.build.Engine).
        argv.append("--no-repack")
    return argv + _speculative_argv(config, draft_path=draft_path)


def _speculative_argv(config: BenchmarkConfig, *, draft_path: Path | None) -> list[str]:
    """The llama-server flags of the config's speculative decoding: its types, its draft model
    and the draft's settings (``_synthetic_draft_argv``: the synthetic drafter's)."""
    argv: list[str] = []
    if config.spec_types:
        argv += ["--spec-type", ",".join(config.spec_types)]
    if draft_path is not None:
        argv += ["-md", str(draft_path)]
    if config.n_max is not None:
        argv += ["--spec-draft-n-max", str(config.n_max)]
    if config.n_min is not None:
        argv += ["--spec-draft-n-min", str(config.n_min)]
    if config.p_min is not None:
        argv += ["--spec-draft-p-min", repr(config.p_min)]
    if config.draft_n_gpu_layers is not None:
        argv += ["-ngld", str(config.draft_n_gpu_layers)]
    if config.draft_backend_sampling is not None:
        argv.append(
            "--spec-draft-backend-sampling"
            if config.draft_backend_sampling
            else "--no-spec-draft-backend-sampling"
        )
    return argv + _synthetic_draft_argv(config)


def _synthetic_draft_argv(config: BenchmarkConfig) -> list[str]:
    """The llama-server flags of the config's synthetic drafter: its draft length and rates."""
    argv: list[str] = []
    if config.spec_synth_len is not None:
        argv += ["--spec-synth-len", repr(config.spec_synth_len)]
    if config.spec_synth_rates is not None:
        argv += ["--spec-synth-rates", ",".join(repr(rate) for rate in config.spec_synth_rates)]
    return argv


# ggml's device names by backend: the backend's prefix and the GPU's index in its order.
GPU_DEVICE_PREFIXES = {"cuda": "CUDA", "rocm": "ROCm", "hip": "ROCm", "vulkan": "Vulkan"}


def gpu_device_name(engine: Engine, index: int) -> str:
    """The engine's name for its GPU number ``index`` (``CUDA1``), as --spec-draft-device takes it."""
    prefix = GPU_DEVICE_PREFIXES.get(engine.backend)
    if prefix is None:
        raise EngineBuildError(
            f"draft_gpu needs a GPU engine, but this llama-server's backend is {engine.backend!r} "
            "(set SPECBOARD_LLAMA_BACKEND=cuda for a CUDA binary given by path)"
        )
    return f"{prefix}{index}"


def gpu_placement_argv(config: BenchmarkConfig, *, engine: Engine) -> list[str]:
    """The multi-GPU flags of a config; none at the engine's defaults, so a single-GPU config's
    command is what it always was."""
    argv: list[str] = []
    if config.split_mode != ENGINE_DEFAULT_SPLIT_MODE:
        argv += ["--split-mode", config.split_mode]
    if config.tensor_split is not None:
        argv += ["--tensor-split", ",".join(str(int(part)) for part in config.tensor_split)]
    if config.main_gpu != 0:
        argv += ["--main-gpu", str(config.main_gpu)]
    if config.draft_gpu is not None:
        # b11434's name for --device-draft (-devd); the draft then ignores the target's split.
        argv += ["--spec-draft-device", gpu_device_name(engine, config.draft_gpu)]
    return argv


def display_command(argv: list[str]) -> str:
    """The command as a person would paste it into a shell."""
    return shlex.join(argv)


class LlamaServer:
    """A running llama-server; use as a context manager so it is always stopped."""

    def __init__(
        self,
        argv: list[str],
        *,
        port: int,
        start_timeout_s: float = 600.0,
        library_dir: str | None = None,
    ) -> None:
        self.argv = argv
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.start_timeout_s = start_timeout_s
        self._library_dir = library_dir
        self._process: subprocess.Popen[bytes] | None = None
        self._log_dir = tempfile.TemporaryDirectory(prefix="specboard-server-")
        self.log_path = Path(self._log_dir.name) / "llama-server.log"
        self.load_seconds: float | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Launch the process and wait until /health says it is loaded."""
        environment = dict(os.environ)
        # CUDA numbers GPUs fastest first by default, NVML by PCI bus: in bus order the
        # config's main_gpu and draft_gpu, CUDA_VISIBLE_DEVICES and the per-GPU memory and
        # energy figures (runner.provenance, runner.energy) all name the same GPU by one number.
        environment.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        if self._library_dir:
            existing = environment.get("LD_LIBRARY_PATH")
            environment["LD_LIBRARY_PATH"] = (
                f"{self._library_dir}:{existing}" if existing else self._library_dir
            )
        log_file = self.log_path.open("wb")
        started = time.monotonic()
        # start_new_session: a Ctrl-C aimed at us does not reach the server first, and we
        # can stop it ourselves in order.
        self._process = subprocess.Popen(  # noqa: S603 - an argument list, never a shell
            self.argv,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - only a prctl call, no Python state
        )
        log_file.close()
        try:
            self._wait_until_ready(started)
        except BaseException:
            self.stop()
            raise
        self.load_seconds = time.monotonic() - started

    def _wait_until_ready(self, started: float) -> None:
        with httpx.Client(timeout=5.0) as client:
            while True:
                self.raise_if_dead()
                try:
                    response = client.get(f"{self.base_url}/health")
                    if response.status_code == 200 and response.json().get("status") == "ok":
                        return
                except (httpx.HTTPError, ValueError):
                    pass
                if time.monotonic() - started > self.start_timeout_s:
                    raise EngineTimeoutError(
                        f"llama-server was not ready after {self.start_timeout_s:.0f} s",
                        self.log_tail(),
                    )
                time.sleep(0.1)

    def raise_if_dead(self) -> None:
        """Raise EngineCrashedError, with the log tail, if the process has exited."""
        if self._process is None:
            raise EngineCrashedError("llama-server was never started")
        code = self._process.poll()
        if code is not None:
            tail = self.log_tail()
            last_line = next(
                (line for line in reversed(tail.splitlines()) if line.strip()), "no output"
            )
            raise EngineCrashedError(
                f"engine crashed: llama-server exited with code {code}: {last_line.strip()}",
                tail,
            )

    def log_tail(self, limit: int = LOG_TAIL_BYTES) -> str:
        try:
            with self.log_path.open("rb") as log:
                log.seek(0, os.SEEK_END)
                size = log.tell()
                log.seek(max(0, size - limit))
                return log.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_text(self) -> str:
        try:
            return self.log_path.read_text("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, grace_s: float = 10.0) -> None:
        """Stop the process: SIGTERM, then SIGKILL if it lingers. Safe to call twice."""
        process = self._process
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait(timeout=grace_s)

    def cleanup(self) -> None:
        self.stop()
        self._log_dir.cleanup()
