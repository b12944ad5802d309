"""Errors the runner raises; each carries one clear line for a person to read."""


class RunnerError(Exception):
    """Base class: the message is the one line shown to the user."""


class ConfigError(RunnerError):
    """The benchmark config is invalid."""


class ModelCheckError(RunnerError):
    """A model file is missing, unreadable or incompatible with the config."""


class EngineBuildError(RunnerError):
    """llama-server could not be built or located."""


class EngineCrashedError(RunnerError):
    """llama-server died or stopped answering; the message carries its log tail."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail


class EngineTimeoutError(EngineCrashedError):
    """llama-server did not become ready, or a request did not finish, in time."""


class BenchmarkCancelled(RunnerError):
    """The caller asked the benchmark to stop."""


class EngineResponseError(RunnerError):
    """llama-server answered, but not with a usable completion (an error, or no timings)."""


class ResultError(RunnerError):
    """A benchmark result does not match the result schema (runner.results).

    `errors` holds every problem by top-level field (the message names the whole path), for an
    API to answer with; the error's text is the first few on one line.
    """

    def __init__(self, message: str, errors: dict[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or {}
