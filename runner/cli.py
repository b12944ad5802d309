"""Command-line interface: `python -m runner engine|fixtures|gpus|budget|run|schema|submit|upload`.

Each command wraps one runner function and prints its answer; errors are one line on stderr.
`submit` and `upload` talk to a Specboard site (runner/client.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.engines import build as engine_build
from runner.errors import RunnerError

if TYPE_CHECKING:
    # Imported where used, so that a command loads only what it needs.
    from runner.client import Credentials
    from runner.config import BenchmarkConfig
    from runner.results import BenchmarkResult, Summary

MODELS_DIR_VARIABLE = "SPECBOARD_MODELS_DIR"


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _load_config(path: str) -> BenchmarkConfig:
    from runner.config import parse_config

    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise RunnerError(f"config file not found: {path}") from None
    except json.JSONDecodeError as error:
        raise RunnerError(f"config file {path} is not valid JSON: {error}") from None
    return parse_config(data)


def _command_engine(args: argparse.Namespace) -> int:
    if args.inprocess:
        version = engine_build.ensure_inprocess(log=_stderr)
        print(f"{engine_build.INPROCESS_PACKAGE}\t{version}")
        return 0
    engine = engine_build.locate(server=args.server, backend=args.backend, log=_stderr)
    print(f"{engine.server_path}\t{engine.release}\t{engine.backend}")
    return 0


def _command_gpus(args: argparse.Namespace) -> int:
    from runner.provenance import describe_gpus, visible_gpus

    gpus = visible_gpus()
    if gpus is None:
        raise RunnerError("no NVML here: install nvidia-ml-py on a host with an NVIDIA driver")
    if args.json:
        # What a host advertises: manage.py register_gpu_host NAME --hardware SLUG --gpus '...'
        print(json.dumps(gpus))
        return 0
    for gpu in gpus:
        print(f"{gpu['index']}\t{gpu['name']}\t{gpu['memory_bytes']}")
    print(describe_gpus(gpus))
    return 0


def _command_fixtures(args: argparse.Namespace) -> int:
    from runner.gguf.tiny_models import write_fixtures

    written = write_fixtures(Path(args.directory))
    if args.real:
        from runner.gguf.real_model import place_real_models

        written |= place_real_models(Path(args.directory))
    for name, path in sorted(written.items()):
        print(f"{name}\t{path}")
    return 0


def _command_budget(args: argparse.Namespace) -> int:
    from runner.protocols import token_budget

    config = _load_config(args.config)
    budget = token_budget(config, with_baseline=args.baseline)
    print(json.dumps({"config_key": config.key, **budget}, indent=2))
    return 0


def _command_run(args: argparse.Namespace) -> int:
    from runner.benchmark import run_benchmark
    from runner.protocols import token_budget

    config = _load_config(args.config)
    models_dir = Path(args.models or os.environ.get(MODELS_DIR_VARIABLE) or ".")
    budget = token_budget(config, with_baseline=args.baseline)
    _stderr(
        f"config {config.key}: {config.spec_label}, protocol {config.protocol.name}, "
        f"{budget['requests']} requests, about {budget['total_tokens']} tokens"
    )
    engine = (
        None
        if config.engine != "llama-server"
        else engine_build.locate(server=args.server, log=_stderr)
    )

    def progress(event: dict[str, Any]) -> None:
        _stderr(
            f"[{event['phase']}] {event['done']}/{event['total']} requests, "
            f"{event['tokens']} tokens, {event['elapsed_s']:.1f} s"
        )

    result = run_benchmark(
        config,
        models_dir=models_dir,
        engine=engine,
        with_baseline=args.baseline,
        progress=progress,
        request_timeout_s=args.request_timeout,
        start_timeout_s=args.start_timeout,
    )
    Path(args.out).write_text(result.model_dump_json(indent=2))
    _stderr(summary_line(result))
    return 0


def _speedup_words(result: BenchmarkResult) -> str:
    """What the summary's speedup divides, in the line's words: the per-point figure and, over
    several points (depths, levels, categories), that it is their geometric mean."""
    points = result.points
    levels = [p.concurrency for p in points if p.concurrency is not None]
    categories = [p.category for p in points if p.category is not None]
    figure = "aggregate tok/s" if levels else "mean decode tok/s"
    if levels:
        across = (len(levels), "concurrency levels")
    elif categories:
        across = (len(categories), "categories")
    else:
        across = (len(points), "depths")
    if across[0] > 1:
        return f"geometric mean over {across[0]} {across[1]} of {figure} over the baseline's"
    return f"{figure} over the baseline's"


def summary_line(result: BenchmarkResult) -> str:
    """The one line `run` prints: decode tok/s with n and interval, the speedup with what it
    divides, lossless, tau, for the concurrency protocol the crossover level and for the
    quality protocol the accuracies."""
    summary = result.summary
    decode = summary.decode_tokens_per_second
    interval = (
        "no interval (fewer than two requests)"
        if decode.ci95_low is None or decode.ci95_high is None
        else f"95% CI [{decode.ci95_low:.2f}, {decode.ci95_high:.2f}]"
    )
    line = f"decode tok/s (server timings, n={decode.n}): mean {decode.mean or 0.0:.2f}, {interval}"
    if summary.speedup is not None:
        line += (
            f"; speedup {summary.speedup:.2f}x ({_speedup_words(result)}); "
            f"lossless {summary.lossless}"
        )
        if any(p.concurrency is not None for p in result.points):
            crossover = summary.crossover_concurrency
            line += (
                "; speculation paid at every level"
                if crossover is None
                else f"; crossover at {crossover} concurrent (lowest level with speedup below 1)"
            )
    if summary.tau is not None:
        line += f"; tau {summary.tau:.2f}"
    return line + _quality_words(summary)


def _quality_words(summary: Summary) -> str:
    """The quality protocol's part of the line: the accuracy and, paired, the baseline's and
    the difference with its interval and McNemar's p; "" for other protocols."""
    own = summary.quality
    if own is None:
        return ""
    words = (
        f"; accuracy {own.correct}/{own.tasks} ({own.accuracy:.1%}, "
        f"95% CI [{own.ci95_low:.1%}, {own.ci95_high:.1%}])"
    )
    paired = getattr(summary, "quality_difference", None)
    if paired is not None:
        baseline = paired.both_correct + paired.only_baseline_correct
        words += (
            f", baseline's {baseline}/{paired.pairs}; difference "
            f"{paired.difference * 100:+.1f} points (paired 95% CI "
            f"[{paired.ci95_low * 100:+.1f}, {paired.ci95_high * 100:+.1f}], "
            f"McNemar p {paired.mcnemar_p:.3f})"
        )
    return words


def _credentials(args: argparse.Namespace) -> Credentials:
    """The site and token for submit and upload, with a warning when the token came as a flag."""
    from runner import client

    if args.token:
        print(client.TOKEN_FLAG_WARNING, file=sys.stderr)
    return client.resolve_credentials(site=args.site, token=args.token)


def _command_submit(args: argparse.Namespace) -> int:
    from runner import client

    credentials = _credentials(args)
    return client.submit(
        credentials=credentials,
        config_path=args.config,
        hardware=args.hardware,
        wait=args.wait,
        poll_s=args.poll,
    )


def _command_upload(args: argparse.Namespace) -> int:
    from runner import client

    credentials = _credentials(args)
    return client.upload(
        credentials=credentials,
        result_path=args.result,
        hardware=args.hardware,
        publish_name=args.publish_name,
    )


def _site_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--site", help="the site's URL (default $SPECBOARD_SITE or client.toml)")
    parser.add_argument(
        "--token",
        help="API token; prefer $SPECBOARD_TOKEN or ~/.config/specboard/client.toml (the "
        "default): every local user can read a command line",
    )


def _command_schema(args: argparse.Namespace) -> int:
    from runner.results import BenchmarkResult

    print(json.dumps(BenchmarkResult.model_json_schema(), indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m runner", description="Benchmark speculative decoding on llama-server."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    engine = commands.add_parser("engine", help="build or locate llama-server")
    engine.add_argument("--server", help="use this llama-server binary instead of building")
    engine.add_argument("--backend", choices=["cpu", "cuda"], help="build backend (default cpu)")
    engine.add_argument(
        "--inprocess", action="store_true", help="build and install llama-cpp-python instead"
    )
    engine.set_defaults(handler=_command_engine)

    fixtures = commands.add_parser("fixtures", help="write tiny random-weight GGUF test models")
    fixtures.add_argument("directory")
    fixtures.add_argument(
        "--real",
        action="store_true",
        help="also place the real models (Gemma 3 270M base, SmolLM2-135M-Instruct and its DFlash draft)",
    )
    fixtures.set_defaults(handler=_command_fixtures)

    gpus = commands.add_parser(
        "gpus", help="the GPUs the engine can use here (NVML): what a GPU host advertises"
    )
    gpus.add_argument("--json", action="store_true", help="as JSON, for register_gpu_host --gpus")
    gpus.set_defaults(handler=_command_gpus)

    budget = commands.add_parser("budget", help="print a config's estimated token budget")
    budget.add_argument("config")
    budget.add_argument("--baseline", action="store_true")
    budget.set_defaults(handler=_command_budget)

    run = commands.add_parser("run", help="run one benchmark config")
    run.add_argument("config", help="config JSON file")
    run.add_argument("--out", required=True, help="where to write the result JSON")
    run.add_argument("--models", help=f"models directory (default ${MODELS_DIR_VARIABLE} or .)")
    run.add_argument("--server", help="use this llama-server binary")
    run.add_argument("--baseline", action="store_true", help="also run the paired baseline")
    run.add_argument("--request-timeout", type=float, default=1800.0)
    run.add_argument("--start-timeout", type=float, default=900.0)
    run.set_defaults(handler=_command_run)

    schema = commands.add_parser("schema", help="print the result file's JSON Schema")
    schema.set_defaults(handler=_command_schema)

    _site_commands(commands)
    return parser


def _site_commands(commands: Any) -> None:
    """The commands that talk to a Specboard site: submit a config, upload a result."""
    submit = commands.add_parser("submit", help="submit a config to a Specboard site")
    submit.add_argument("config", help="config JSON file")
    _site_arguments(submit)
    submit.add_argument("--hardware", help="hardware slug (optional when the site serves one)")
    submit.add_argument("--wait", action="store_true", help="follow the job, print its result")
    submit.add_argument("--poll", type=float, default=5.0, help="seconds between polls (5)")
    submit.set_defaults(handler=_command_submit)

    upload = commands.add_parser("upload", help="upload a result measured on your own GPU")
    upload.add_argument("result", help="result JSON file (python -m runner run ... --out)")
    _site_arguments(upload)
    upload.add_argument("--hardware", required=True, help="your GPU, e.g. 'RTX 4090'")
    upload.add_argument(
        "--publish-name", action="store_true", help="show your user name in its provenance"
    )
    upload.set_defaults(handler=_command_upload)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except RunnerError as error:
        _stderr(f"error: {str(error).splitlines()[0] if str(error) else type(error).__name__}")
        log_tail = getattr(error, "log_tail", "")
        if log_tail:
            _stderr("--- llama-server log tail ---\n" + log_tail[-1500:])
        return 2
    except KeyboardInterrupt:
        _stderr("error: interrupted")
        return 130
