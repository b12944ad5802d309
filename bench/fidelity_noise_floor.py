"""How much does arithmetic alone move a model's top-2 margin? The noise floor of the fidelity
grade's near-tie threshold (runner.fidelity.NEAR_TIE_MARGIN, 1.0 nats, set from this bench on CPU).

Same build, same model, the baseline against itself, with the speculative settings off and on:

1. baseline twice: the same requests in two llama-server processes (settings off);
2. self-draft: draft-simple with the model as its own draft (lossless in exact arithmetic), paired
   with its baseline by ``run_benchmark``, whose margin pass judges every divergence
   (runner.fidelity.judge_divergences): the margin at each flip and its class;
3. margin shift: the baseline decoded one token a step against the baseline continued from a
   batched prefill of its own prefix (the continuation the grade uses), position by position:
   how far batched evaluation moves a margin, and which tokens it flips on its own;
4. the top-2 margins of the baseline at every generated position: how many a threshold forgives.

No arguments: the tiny CPU fixtures (written to a temporary folder). With the real model:
    python bench/fidelity_noise_floor.py --real
The last line is the headline: the largest margin at which arithmetic alone flipped a token, and
the largest margin shift, against the threshold.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner import protocols  # noqa: E402
from runner.benchmark import run_benchmark  # noqa: E402
from runner.config import BenchmarkConfig, parse_config  # noqa: E402
from runner.engines.build import Engine, locate  # noqa: E402
from runner.engines.session import EngineSession, open_session  # noqa: E402
from runner.fidelity import MAX_MARGIN, NEAR_TIE_MARGIN  # noqa: E402
from runner.gguf.inspect import inspect_model  # noqa: E402
from runner.gguf.real_model import REAL_MODEL_NAME, place_real_model  # noqa: E402
from runner.gguf.tiny_models import write_fixtures  # noqa: E402
from runner.pairing import first_divergence  # noqa: E402

# Per model: its protocol (the tiny model's random weights have many near ties at depth; the real
# model reads the categories suite's text prompts).
TINY_PROTOCOL = {
    "name": "depth",
    "depths": [64, 256, 512, 1024],
    "output_tokens": 128,
    "requests": 2,
}
REAL_PROTOCOL = {"name": "categories", "output_tokens": 128, "prompts_per_category": 1}
THRESHOLDS = (0.001, 0.01, 0.1, 1.0)


def quantile(values: list[float], share: float) -> float | None:
    """The share-quantile of values (nearest rank), None for none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def session(config: BenchmarkConfig, engine: Engine, models_dir: Path) -> EngineSession:
    target = inspect_model(models_dir / config.target_model)
    return open_session(
        config, engine=engine, target=target, draft=None, request_timeout_s=600,
        start_timeout_s=300,
    )  # fmt: skip


def baseline_passes(
    config: BenchmarkConfig, plan: list[protocols.RequestSpec], engine: Engine, models_dir: Path,
    *, cuts: int,
) -> dict[str, Any]:  # fmt: skip
    """Settings off: the requests twice in two processes, each one's top two at every position,
    and the margin shift of a continuation from a batched prefill of the baseline's own prefix."""
    runs: list[list[list[int]]] = []
    margins: list[float] = []
    shifts: list[float] = []
    shift_flips: list[float] = []
    twice_flips: list[tuple[int, float | None]] = []
    sequential_steps = []
    for run in range(2):
        engine_session = session(config, engine, models_dir)
        engine_session.start()
        try:
            outputs = [engine_session.measure(spec)["output_tokens"] for spec in plan]
            runs.append(outputs)
            if run:
                continue
            for spec, tokens in zip(plan, outputs, strict=True):
                steps = engine_session.top_two(spec)
                sequential_steps.append(steps)
                if [step.token for step in steps] != tokens:
                    raise SystemExit("the margin pass did not retrace the measured baseline")
                margins += [
                    s.margin for s in steps if s.margin is not None and s.margin < MAX_MARGIN
                ]
                # Cut points spread over the request: continue from tokens[:cut] in one batch.
                for cut in range(1, len(tokens), max(1, len(tokens) // (cuts + 1)))[1 : cuts + 1]:
                    continued = engine_session.continued_top_two(spec, tokens[:cut])
                    for sequential, batched in zip(steps[cut:], continued, strict=False):
                        if batched.token != sequential.token:
                            shift_flips.append(sequential.margin or 0.0)
                            break
                        if sequential.margin is not None and batched.margin is not None:
                            shifts.append(abs(batched.margin - sequential.margin))
        finally:
            engine_session.stop()
    for first, second, steps in zip(runs[0], runs[1], sequential_steps, strict=True):
        index = first_divergence(second, first)
        if index is not None:
            twice_flips.append((index, steps[index].margin if index < len(steps) else None))
    return {
        "requests": len(plan),
        "identical_twice": sum(a == b for a, b in zip(*runs, strict=True)),
        "twice_flips": twice_flips,
        "margins": margins,
        "shifts": shifts,
        "shift_flips": shift_flips,
    }


def self_draft(
    config: BenchmarkConfig, engine: Engine, models_dir: Path
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Settings on: the model drafting for itself, graded against its baseline by the runner."""
    result = run_benchmark(config, models_dir=models_dir, engine=engine, with_baseline=True)
    data = result.model_dump(mode="json")
    return data["summary"]["fidelity"], data["requests"]


def measure(
    name: str, protocol: dict, engine: Engine, models_dir: Path, args: argparse.Namespace
) -> dict[str, Any]:
    placement = (
        {"n_gpu_layers": 999, "draft_n_gpu_layers": 999, "flash_attn": "on"}
        if args.gpu
        else {"threads": args.threads}
    )
    config = parse_config(
        {"target_model": name, "draft_model": name, "spec_types": "draft-simple",
         "n_max": args.n_max, "protocol": protocol} | placement
    )  # fmt: skip
    baseline = config.baseline()
    vocab = inspect_model(models_dir / name).vocab_size or 256
    plan = [s for s in protocols.plan_requests(baseline, vocab_size=vocab) if s.phase == "measure"]
    off = baseline_passes(baseline, plan, engine, models_dir, cuts=args.cuts)
    grade, requests = self_draft(config, engine, models_dir)
    divergences = [d for r in requests for d in (r.get("divergences") or [])]
    print(f"\n== {name}: {len(plan)} requests of {plan[0].output_tokens} tokens "
          f"(protocol {protocol['name']}), draft-simple n_max {args.n_max}")  # fmt: skip
    print(f"baseline twice (settings off): {off['identical_twice']}/{off['requests']} identical"
          + "".join(f", diverged at {i} (margin {shown(m)})" for i, m in off["twice_flips"]))  # fmt: skip
    flips = [d for d in divergences if d["kind"] == "near tie"]
    others = [d for d in divergences if d["kind"] != "near tie"]
    print(f"self-draft (settings on): verdict {grade['verdict']}, "
          f"{grade['identical_requests']}/{grade['requests']} identical, "
          f"{len(flips)} near-tie flips, {len(others)} other divergences")  # fmt: skip
    for index, record in enumerate(requests):
        for d in record.get("divergences") or []:
            print(f"  request {index}: position {d['position']}, margin {shown(d['margin'])}, "
                  f"{d['kind']}")  # fmt: skip
    shifts = off["shifts"]
    print(f"margin shift, batched prefix vs one token a step: {len(shifts)} positions, "
          f"median {shown(quantile(shifts, 0.5))}, p99 {shown(quantile(shifts, 0.99))}, "
          f"max {shown(max(shifts, default=None))} nats; tokens it flipped alone: "
          f"{len(off['shift_flips'])}"
          + "".join(f" (margin {shown(m)})" for m in off["shift_flips"]))  # fmt: skip
    margins = off["margins"]
    below = ", ".join(
        f"< {t:g}: {sum(m < t for m in margins) / len(margins):.2%}" for t in THRESHOLDS
    )
    print(f"top-2 margins at {len(margins)} positions: p1 {shown(quantile(margins, 0.01))}, "
          f"p5 {shown(quantile(margins, 0.05))}, median {shown(quantile(margins, 0.5))}; "
          f"share {below}")  # fmt: skip
    flipped = [d["margin"] for d in flips if d["margin"] is not None] + off["shift_flips"]
    flipped += [m for _, m in off["twice_flips"] if m is not None]
    return {
        "flip_margin": max(flipped, default=None),
        "shift": max(shifts, default=None),
        "mismatches": sum(d["kind"] == "mismatch" for d in divergences),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", action="store_true", help="also Gemma 3 270M (real-model extra)")
    parser.add_argument("--real-only", action="store_true", help="only Gemma 3 270M")
    parser.add_argument("--n-max", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cuts", type=int, default=3, help="continuations per request (3.)")
    parser.add_argument("--server", help="llama-server binary")
    parser.add_argument("--target", help="only this real model file, in --models (e.g. SmolLM2)")
    parser.add_argument("--models", type=Path, help="the folder holding --target")
    parser.add_argument("--gpu", action="store_true", help="offload every layer, flash attention")
    args = parser.parse_args()
    engine = locate(server=args.server)
    print(f"engine {engine.release} ({engine.backend}); threshold {NEAR_TIE_MARGIN} nats")
    found = []
    if args.target:
        found.append(measure(args.target, REAL_PROTOCOL, engine, args.models, args))
    with tempfile.TemporaryDirectory() as scratch:
        models_dir = Path(scratch)
        write_fixtures(models_dir)
        if not args.real_only and not args.target:
            found.append(measure("tiny-qwen3.gguf", TINY_PROTOCOL, engine, models_dir, args))
        if args.real or args.real_only:
            place_real_model(models_dir)
            found.append(measure(REAL_MODEL_NAME, REAL_PROTOCOL, engine, models_dir, args))
    flip = max((f["flip_margin"] for f in found if f["flip_margin"] is not None), default=None)
    shift = max((f["shift"] for f in found if f["shift"] is not None), default=None)
    mismatches = sum(f["mismatches"] for f in found)
    print(f"\nnoise_floor flip_margin_max={shown(flip)} margin_shift_max={shown(shift)} "
          f"mismatches={mismatches} threshold={NEAR_TIE_MARGIN}")  # fmt: skip


if __name__ == "__main__":
    main()
