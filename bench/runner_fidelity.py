"""Does the runner measure the engine, not itself?

Side by side in one run, on the same model, depth and build: the runner's decode tok/s (server
timings, through llama-server) against llama-bench's token generation at the same depth, and the
runner's own overhead per config beyond model load and generation.

No arguments: the tiny CPU fixtures (written to a temporary folder). On a GPU box:
    python bench/runner_fidelity.py --model qwen3-8b.gguf --depths 512 4096 --ngl 999 --fa on \
        --option-sets runner --rounds 4
The last line is the headline: fidelity_ratio=<runner / llama-bench, lowest over depths>.

Both sides count tokens one way: the runner's decode tok/s is ``runner.stats.decode_rate``,
(predicted_n - 1) / predicted_ms (llama-server's generation time starts at the first token, so
it holds n - 1 decode steps), and llama-bench's tg is n tokens over n decode calls.
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
# session's default (host sampling, streamed) beside the current one; "runner" measures the
# runner's defaults alone (the cheapest headline, for many rounds on a lent GPU).
OPTION_SETS = {
    "all": ((False, True), (True, True), (False, False), (True, False)),
    "streaming": ((False, True), (True, True)),
    "defaults": ((False, True), (True, False)),
    "runner": None,
}


def label_of(bs: bool, stream: bool) -> str:
    return ("-bs" if bs else "plain") + (" stream" if stream else " no-stream")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="GGUF file (default: the tiny qwen3 fixture)")
    parser.add_argument("--depths", type=int, nargs="+", default=[512])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="alternate llama-bench and the runner this many times per depth (ABBA order), so a "
        "drift of the GPU's clocks during the run falls on both sides",
    )
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
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more (an even number balances the ABBA order)")

    engine = locate(server=args.server)
    with tempfile.TemporaryDirectory() as scratch:
        if args.model:
            model = Path(args.model).resolve()
        else:
            model = write_fixtures(Path(scratch))["tiny-qwen3.gguf"]
        print(f"engine {engine.release} ({engine.backend}), model {model.name}", flush=True)
        plain = parse_config({"target_model": model.name})
        defaults = (plain.effective_backend_sampling, plain.stream)
        option_sets = OPTION_SETS[args.option_sets] or (defaults,)
        ratios = []
        overheads = []
        for depth in args.depths:
            ratio = measure_depth(
                engine, model, depth, option_sets, args, defaults=defaults, overheads=overheads
            )
            if ratio is not None:
                ratios.append(ratio)
        if overheads:
            print(f"harness_overhead_s_median={statistics.median(overheads):.3f}")
        # The headline is the runner's default options at the worst depth; the other option
        # sets are printed above so a change of defaults can be argued from the same run.
        print(f"fidelity_ratio={min(ratios):.3f}" if ratios else "fidelity_ratio=nan")


def measure_depth(engine, model: Path, depth: int, option_sets, args, *, defaults, overheads):
    """One depth: llama-bench and every option set, alternated over the rounds.

    Each option set's ratio is its mean decode over the rounds against llama-bench's mean over
    the same rounds; the rounds alternate which side goes first (bench then runner, then runner
    then bench), so a slow drift of the clocks does not favour either. Returns the ratio of the
    runner's defaults, or None if they were not measured (or failed).
    """
    benches: list[float] = []
    decodes: dict[tuple[bool, bool], list[tuple[int, float]]] = {pair: [] for pair in option_sets}
    reference: list[str] | None = None
    for round_index in range(args.rounds):
        sides = ["bench", "runner"] if round_index % 2 == 0 else ["runner", "bench"]
        for side in sides:
            if side == "bench":
                benches.append(
                    llama_bench_tg(
                        engine, model, depth=depth, tokens=args.tokens, reps=args.reps, args=args
                    )
                )
                print(
                    f"depth {depth:>6} {'llama-bench':>15} round {round_index + 1}: "
                    f"{benches[-1]:9.2f} tok/s",
                    flush=True,
                )
                continue
            for bs, stream in option_sets:
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
                    print(
                        f"depth {depth:>6} {label_of(bs, stream):>15}: failed: {str(error)[:300]}",
                        flush=True,
                    )
                    continue
                decodes[(bs, stream)].append((round_index, decode))
                overheads.append(overhead)
                # Greedy output must not depend on how it is requested: the same prompts give
                # the same tokens under every option set and in every round.
                reference = reference if reference is not None else outputs
                same = "same output" if outputs == reference else "OUTPUT DIFFERS"
                print(
                    f"depth {depth:>6} {label_of(bs, stream):>15} round {round_index + 1}: runner "
                    f"{decode:9.2f} tok/s, harness overhead {overhead:.3f} s "
                    f"(config total {total:.1f} s), {same}",
                    flush=True,
                )
    headline = None
    for pair, measured in decodes.items():
        if not measured:
            continue
        values = [value for _, value in measured]
        # Against llama-bench of the same rounds: a failed runner round drops its bench too, or
        # the drift the alternation cancels would come back.
        bench = statistics.fmean(benches[index] for index, _ in measured)
        ratio = statistics.fmean(values) / bench
        per_round = [value / benches[index] for index, value in measured]
        print(
            f"depth {depth:>6} {label_of(*pair):>15}: runner {statistics.fmean(values):9.2f} tok/s, "
            f"llama-bench {bench:9.2f} tok/s over {len(measured)} round(s), ratio {ratio:.3f}"
            f" (rounds {min(per_round):.3f}-{max(per_round):.3f})",
            flush=True,
        )
        if pair == defaults:
            headline = ratio
    return headline


if __name__ == "__main__":
    main()
