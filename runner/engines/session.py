"""Engine sessions: one loaded model that answers measured requests, whatever the engine.

Two implementations share one interface, so every protocol, metric and result field is the same:
- ``ServerSession``: a real llama-server process over HTTP (all speculative types; the default).
- ``InProcessSession`` (runner.engines.llama_cpp_python): llama-cpp-python in this process
  (baseline and prompt-lookup drafting only; an optional extra).

``open_session`` picks the one a config asks for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx

from runner.config import BenchmarkConfig
from runner.engines.build import Engine
from runner.engines.concurrent import send_wave
from runner.engines.measure import measure_request, measure_top_two
from runner.engines.server import LlamaServer, display_command, free_port, server_argv
from runner.errors import EngineCrashedError, EngineTimeoutError
from runner.fidelity import TopTwo
from runner.gguf.inspect import ModelInfo
from runner.protocols import RequestSpec

# How much of a running engine's log a progress event carries.
LIVE_LOG_BYTES = 2000

T = TypeVar("T")


class EngineSession(Protocol):
    argv: list[str]
    command: str

    @property
    def pid(self) -> int: ...

    @property
    def load_seconds(self) -> float | None: ...

    def start(self) -> None: ...

    def measure(self, spec: RequestSpec) -> dict[str, Any]: ...

    def top_two(self, spec: RequestSpec) -> list[TopTwo]: ...

    def continued_top_two(self, spec: RequestSpec, prefix: Sequence[int]) -> list[TopTwo]: ...

    def stop(self) -> None: ...

    def log_text(self) -> str: ...

    def recent_log(self) -> str: ...


class ServerSession:
    """One llama-server process for one config, measured over loopback HTTP."""

    def __init__(
        self,
        config: BenchmarkConfig,
        *,
        engine: Engine,
        target: ModelInfo,
        draft: ModelInfo | None,
        request_timeout_s: float,
        start_timeout_s: float,
        slots: int = 1,
    ) -> None:
        port = free_port()
        self.argv = server_argv(
            config,
            engine=engine,
            target_path=Path(target.path),
            draft_path=Path(draft.path) if draft else None,
            port=port,
            slots=slots,
        )
        self.command = display_command(self.argv)
        self.request_timeout_s = request_timeout_s
        self.server = LlamaServer(
            self.argv,
            port=port,
            start_timeout_s=start_timeout_s,
            # Builds keep libllama and libggml beside the binary, as release archives do.
            library_dir=str(Path(engine.server_path).parent),
        )
        # llama-server may close an idle keep-alive connection just as we reuse it; a fresh
        # loopback connection per call costs microseconds and never races.
        self.client = httpx.Client(
            timeout=request_timeout_s, limits=httpx.Limits(max_keepalive_connections=0)
        )
        self._log = ""

    @property
    def pid(self) -> int:
        return self.server.pid or 0

    @property
    def load_seconds(self) -> float | None:
        return self.server.load_seconds

    def start(self) -> None:
        self.server.start()

    def measure(self, spec: RequestSpec) -> dict[str, Any]:
        return self._call(measure_request, spec)

    def top_two(self, spec: RequestSpec) -> list[TopTwo]:
        """The top two tokens at each position of the request, in an unmeasured pass."""
        return self._call(measure_top_two, spec)

    def continued_top_two(self, spec: RequestSpec, prefix: Sequence[int]) -> list[TopTwo]:
        """The baseline's top two at each position after the prompt and ``prefix`` (output token
        ids), continued greedily to the request's end, in an unmeasured pass."""
        return self._call(functools.partial(measure_top_two, prefix=list(prefix)), spec)

    def measure_wave(self, specs: list[RequestSpec]) -> list[dict[str, Any]]:
        """Requests in flight at once, one per slot (runner.engines.concurrent)."""
        return self._call(send_wave, specs)

    def _call(self, function: Callable[..., T], spec: RequestSpec | list[RequestSpec]) -> T:
        try:
            return function(
                self.client, self.server.base_url, spec, timeout_s=self.request_timeout_s
            )
        except httpx.TimeoutException as error:
            self.server.raise_if_dead()
            raise EngineTimeoutError(
                f"a request did not finish within {self.request_timeout_s:.0f} s",
                self.server.log_tail(),
            ) from error
        except httpx.HTTPError as error:
            self.server.raise_if_dead()
            raise EngineCrashedError(
                f"engine crashed: request failed: {error}", self.server.log_tail()
            ) from error

    def stop(self) -> None:
        self.client.close()
        self.server.stop()
        self._log = self.server.log_text()
        self.server.cleanup()

    def log_text(self) -> str:
        return self._log or self.server.log_text()

    def recent_log(self) -> str:
        """The end of the engine's log while it runs (read from the file's end, not whole)."""
        if self._log:
            return self._log[-LIVE_LOG_BYTES:]
        return self.server.log_tail(LIVE_LOG_BYTES)


def open_session(
    config: BenchmarkConfig,
    *,
    engine: Engine,
    target: ModelInfo,
    draft: ModelInfo | None,
    request_timeout_s: float,
    start_timeout_s: float,
    slots: int = 1,
) -> EngineSession:
    """The session for the config's engine; ``slots`` requests at once (llama-server only)."""
    if config.engine == "llama-cpp-python":
        from runner.engines.llama_cpp_python import InProcessSession

        return InProcessSession(config, target=target)
    return ServerSession(
        config,
        engine=engine,
        target=target,
        draft=draft,
        request_timeout_s=request_timeout_s,
        start_timeout_s=start_timeout_s,
        slots=slots,
    )
