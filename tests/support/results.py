"""Runner results for tests, built and checked by the runner's own result model.

Like the runner, a fake builds its request records first and derives its summary from them
(``runner.stats.pooled_figures``), so the result model's evidence check sees a consistent file.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

from leaderboard.models import Config, ModelFile
from runner.config import BenchmarkConfig
from runner.engines.build import Engine
from runner.engines.concurrent import share_out
from runner.engines.server import display_command, server_argv
from runner.gguf.inspect import inspect_model
from runner.protocols import plan_requests
from runner.results import BenchmarkResult
from runner.stats import pooled_figures

# About this many verify steps a request, as the fakes have always had.
STEPS_PER_REQUEST = 10


def _output_hash(label: str) -> str:
    """A test's output label ("a", "out-3") as the sha256 a runner record carries."""
    if len(label) == 64 and all(c in "0123456789abcdef" for c in label):
        return label
    return hashlib.sha256(label.encode()).hexdigest()


def _model_info(reference: str, models_dir: Path) -> dict:
    """A model's provenance entry: its registered metadata, or its file read by the runner."""
    try:
        row = ModelFile.objects.filter(path=reference).first()
    except RuntimeError:  # a test without database access (the GPU side)
        row = None
    if row is not None:
        return row.metadata | {"path": row.path, "sha256": row.sha256}
    return inspect_model(models_dir / reference).as_dict() | {"path": reference}


def implied_argv(config: BenchmarkConfig, models: dict) -> list[str]:
    """The llama-server command the config implies for these model entries (``server_argv``),
    as a fake CUDA engine named llama-server would run it: the door holds a result's argv to it."""
    draft = models.get("draft")
    return server_argv(
        config,
        engine=Engine(server_path="llama-server", release="b11434", backend="cuda"),
        target_path=Path(models["target"]["path"]),
        draft_path=Path(draft["path"]) if draft else None,
        port=8080,
    )


def _verify_steps(accepted: int, tau: float | None, requests: int) -> int:
    """The verify steps over all requests that give tau exactly with the accepted drafts, as a
    real engine's counters agree (its per-position counts sum to its accepted drafts). No tau:
    no verify steps (nothing was counted); tau 1 without drafts: steps that accepted nothing."""
    if tau is None:
        return 0
    gain = tau - 1.0
    if gain < 0:
        raise ValueError(f"tau {tau} is below 1")
    if not gain:
        if accepted:
            raise ValueError(f"tau 1 with {accepted} accepted drafts is no engine's count")
        return STEPS_PER_REQUEST * requests
    steps = round(accepted / gain)
    if not steps or not math.isclose(1.0 + accepted / steps, tau, rel_tol=1e-12):
        raise ValueError(
            f"tau {tau} with {accepted} accepted drafts is no whole number of verify steps"
        )
    return steps


def _per_position(counted: int, steps: int) -> list[int]:
    """Accepted drafts by draft position, each position accepted in at most every step."""
    if not steps:
        return []
    return [min(steps, counted - steps * i) for i in range(math.ceil(counted / steps))]


def fake_requests(
    decode: list[float],
    *,
    outputs: list[str],
    draft: tuple[int, int],
    tau: float | None,
    tokens: int = 64,
) -> list[dict]:
    """Measured request records with the given decode tok/s, each generating `tokens` tokens,
    whose counts pool to the draft totals and to tau (runner.stats.acceptance_and_tau)."""
    count = len(decode)
    drafted, accepted = share_out(draft[0], [1] * count), share_out(draft[1], [1] * count)
    # Each request's steps in proportion to its accepted drafts, so that each gives tau too.
    steps = share_out(_verify_steps(draft[1], tau, count), accepted)
    # n tokens: n - 1 decode steps after the first over predicted_ms (runner.stats.decode_rate);
    # the wall time holds the prompt's 5 ms, the generation and 1 ms of HTTP.
    steps_ms = (tokens - 1) * 1000
    return [
        {
            "phase": "measure", "point": 0, "input_tokens": None,
            "output_tokens_requested": tokens, "prompt_n": 20, "prompt_ms": 5.0,
            "predicted_n": tokens, "predicted_ms": steps_ms / value,
            "decode_tokens_per_second": value, "server_predicted_per_second": value,
            "end_to_end_tokens_per_second": tokens * 1000 / (6.0 + steps_ms / value),
            "ttft_ms": 6.0, "ttft_source": "server prompt time", "wall_ms": 6.0 + steps_ms / value,
            "draft_n": drafted[i], "draft_n_accepted": accepted[i], "verify_steps": steps[i],
            "tau": 1.0 + accepted[i] / steps[i] if steps[i] else None,
            "accepted_per_position": _per_position(accepted[i], steps[i]),
            "output_sha256": _output_hash(outputs[i]), "distinct_4gram_ratio": 0.9,
            "stopped_early": False, "index": i, "first_divergence": None,
        }
        for i, value in enumerate(decode)
    ]  # fmt: skip


def fake_result(
    config: BenchmarkConfig | str,
    decode: list[float],
    *,
    models_dir: Path,
    draft: tuple[int, int] = (0, 0),
    tau: float | None = None,
    outputs: list[str] | None = None,
    release: str = "b11434",
    target_sha256: str | None = None,
    complete: bool = True,
    tokens: int | None = None,
    gpu: str | None = None,
) -> dict:
    """A runner result for a config (or a stored config's key) with the given per-request decode
    tok/s, `draft` (drafted, accepted) totals and tau, built and checked by the runner's own
    result model, as JSON data. Its summary is what its request records give.

    Like the runner's, it measures every request its config's protocol plans, each generating
    the tokens asked for; `complete=False` keeps only the requests given, `tokens` makes each
    generate that many instead (files the door refuses, tests.support.door_files). It names no
    GPU unless given `gpu` (the door holds a named one to the kind it is recorded under)."""
    if isinstance(config, str):
        config = BenchmarkConfig.from_canonical(Config.objects.get(key=config).canonical)
    planned = [spec for spec in plan_requests(config, vocab_size=256) if spec.phase == "measure"]
    outputs = outputs or [f"out-{i}" for i in range(len(decode))]
    if complete and len(decode) < len(planned):
        # The runner measures every request its protocol plans (the door refuses fewer): the
        # requests a test leaves out run at the mean of those it gives, so its figures stand.
        missing = len(planned) - len(decode)
        outputs = list(outputs) + [f"out-{i}" for i in range(len(decode), len(planned))]
        decode = list(decode) + [sum(decode) / len(decode)] * missing
    tokens = tokens or (planned[0].output_tokens if planned else 64)
    requests = fake_requests(decode, outputs=outputs, draft=draft, tau=tau, tokens=tokens)
    figures = pooled_figures(requests)
    target = _model_info(config.target_model, models_dir)
    if target_sha256:
        target["sha256"] = target_sha256
    models = {
        "target": target,
        "draft": _model_info(config.draft_model, models_dir) if config.draft_model else None,
    }
    engine = {
        "server_path": "llama-server",
        "release": release,
        "backend": "cuda",
        "build_flags": [],
        "source": "built",
    }
    result = {
        "config": config.canonical(),
        "config_key": config.key,
        "synthetic": config.is_synthetic,
        "summary": figures
        | {
            "peak_memory_bytes": 123_456_789,
            "memory_kind": "gpu",
            "gpu_seconds": 12.5,
            "engine_seconds": 12.5,
            "load_seconds": 1.0,
            "harness_overhead_seconds": 0.1,
            "speedup": None,
            "lossless": None,
            "baseline_decode_tokens_per_second": None,
            "lossless_note": None,
        },
        "points": [],
        "requests": requests,
        "provenance": {
            "argv": implied_argv(config, models),
            "command": display_command(implied_argv(config, models)),
            "models": models,
            "engine_log_tail": "",
            "engine": engine,
            # No GPU named unless given: the fakes are recorded on kinds of every name.
            "system": ({"gpu": gpu} if gpu else {})
            | {
                "driver": "580.1",
                "cuda": "13.0",
                "hostname": "gpu-1",
            },
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-01T00:01:00+00:00",
            "token_budget": {
                "requests": len(decode),
                "prompt_tokens": 20 * len(decode),
                "generated_tokens": tokens * len(decode),
                "total_tokens": (20 + tokens) * len(decode),
            },
        },
        "schema_version": 1,
        "engine": engine,
        "baseline": None,
    }
    return BenchmarkResult.model_validate(result).model_dump(mode="json")


def result_file(make_result, config: dict, decode: list[float]) -> dict:
    """A runner result file of a config, as `python -m runner run --out` writes it."""
    parsed = BenchmarkConfig.model_validate(config)
    outputs = [hashlib.sha256(f"out-{i}".encode()).hexdigest() for i in range(len(decode))]
    return make_result(parsed, decode, outputs=outputs)
