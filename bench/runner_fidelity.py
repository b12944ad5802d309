"""Does the runner measure the engine, not itself?

Side by side in one run, on the same model, depth and build: the runner's decode tok/s (server
timings, through llama-server) against llama-bench's token generation at the same depth, and the
runner's own overhead per config beyond model load and generation.

No arguments: the tiny CPU fixtures (written to a temporary folder). On a GPU box:
    python bench/runner_fidelity.py --model qwen3-8b.gguf --depths 512 4096 --ngl 999 --fa on
The last line is the headline: fidelity_ratio=<runner / llama-bench, lowest over depths>.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.benchmark import run_benchmark  # noqa: E402
from runner.config import parse_config  # noqa: E402
from runner.engines.build import llama_bench, locate  # noqa: E402
from runner.errors import RunnerError  # noqa: E402
from runner.gguf.tiny_models import write_fixtures  # noqa: E402


def llama_bench_tg(engine, model: Path, *, depth: int, tokens: int, reps: int, args) -> float:
    """llama-bench's mean token-generation tok/s at a depth."""
    rows = llama_bench(
        engine,
        model,
        depths=[depth],
        tokens=tokens,
        reps=reps,
        flash_attn=args.fa,
        n_gpu_layers=args.ngl,
        threads=args.threads,
    )
    return float(rows[0]["avg_ts"])


def runner_decode(
    model_ref: str, models_dir: Path, engine, *, depth, tokens, reps, args, bs, stream
):
    data = {
        "target_model": model_ref,
        "flash_attn": args.fa,
        "backend_sampling": bs,
        "stream": stream,
        "protocol": {
            "name": "depth",
            "depths": [depth],
            "output_tokens": tokens,
            "requests": reps,
            "warmup": 1,
        },
    }
    if args.threads:
        data["threads"] = args.threads
    if args.ngl is not None:
        data["n_gpu_layers"] = args.ngl
    started = time.monotonic()
    result = run_benchmark(parse_config(data), models_dir=models_dir, engine=engine).model_dump(
        mode="json"
    )
    total = time.monotonic() - started
    summary = result["summary"]
    outputs = [r["output_sha256"] for r in result["requests"] if r["phase"] == "measure"]
    return (
        summary["decode_tokens_per_second"]["mean"],
        summary["harness_overhead_seconds"],
        total,
        outputs,
    )


# (GPU-side sampling, streaming) pairs. The headline counts only the runner's defaults (-bs, whole
# responses), so "streaming" prints the comparison without a headline; "defaults" sets the first
# session's default (host sampling, streamed) beside the current one.
OPTION_SETS = {
    "all": ((False, True), (True, True), (False, False), (True, False)),
    "streaming": ((False, True), (True, True)),
    "defaults": ((False, True), (True, False)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="GGUF file (default: the tiny qwen3 fixture)")
    parser.add_argument("--depths", type=int, nargs="+", default=[512])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ngl", type=int)
    parser.add_argument("--fa", default="on", choices=["on", "off"])
    parser.add_argument("--server", help="llama-server binary (llama-bench beside it)")
    parser.add_argument(
        "--option-sets",
        choices=sorted(OPTION_SETS),
        default="all",
        help="which (GPU-side sampling, streaming) pairs to measure",
    )
    args = parser.parse_args()

    engine = locate(server=args.server)
    with tempfile.TemporaryDirectory() as scratch:
        if args.model:
            model = Path(args.model).resolve()
        else:
            model = write_fixtures(Path(scratch))["tiny-qwen3.gguf"]
        print(f"engine {engine.release} ({engine.backend}), model {model.name}")
        ratios = []
        overheads = []
        plain = parse_config({"target_model": model.name})
        defaults = (plain.effective_backend_sampling, plain.stream)
        reference_outputs: dict[int, list[str]] = {}
        for depth in args.depths:
            bench = llama_bench_tg(
                engine, model, depth=depth, tokens=args.tokens, reps=args.reps, args=args
            )
            for bs, stream in OPTION_SETS[args.option_sets]:
                label = ("-bs" if bs else "plain") + (" stream" if stream else " no-stream")
                try:
                    decode, overhead, total, outputs = runner_decode(
                        model.name,
                        model.parent,
                        engine,
                        depth=depth,
                        tokens=args.tokens,
                        reps=args.reps,
                        args=args,
                        bs=bs,
                        stream=stream,
                    )
                except RunnerError as error:
                    # An option set the engine cannot serve is a finding, not the end of the run.
                    print(f"depth {depth:>6} {label:>15}: failed: {str(error)[:300]}", flush=True)
                    continue
                ratio = decode / bench
                overheads.append(overhead)
                # Greedy output must not depend on how it is requested: the same prompts give
                # the same tokens under every option set.
                reference = reference_outputs.setdefault(depth, outputs)
                same = "same output" if outputs == reference else "OUTPUT DIFFERS"
                print(
                    f"depth {depth:>6} {label:>15}: runner {decode:9.2f} tok/s, llama-bench "
                    f"{bench:9.2f} tok/s, ratio {ratio:.3f}, harness overhead {overhead:.3f} s "
                    f"(config total {total:.1f} s), {same}",
                    flush=True,
                )
                if (bs, stream) == defaults:
                    ratios.append(ratio)
        if overheads:
            print(f"harness_overhead_s_median={statistics.median(overheads):.3f}")
        # The headline is the runner's default options at the worst depth; the other option
        # sets are printed above so a change of defaults can be argued from the same run.
        print(f"fidelity_ratio={min(ratios):.3f}" if ratios else "fidelity_ratio=nan")


if __name__ == "__main__":
    main()
