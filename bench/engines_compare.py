"""llama-cpp-python in process against llama-server, on the same model, threads and protocol.

Side by side in one run: the baseline's decode tok/s through each engine, and prompt-lookup
drafting (the binding's only speculative type) against the server's n-gram types. No arguments:
the tiny CPU fixtures. On a GPU box: --model FILE --ngl 999 (the binding must be built with CUDA).
The last line is the headline: inprocess_over_server_baseline=<ratio>.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.benchmark import run_benchmark  # noqa: E402
from runner.config import parse_config  # noqa: E402
from runner.gguf.tiny_models import write_fixtures  # noqa: E402


def measure(model: Path, args, **config) -> dict:
    data = {
        "target_model": model.name,
        "threads": args.threads,
        "protocol": {"name": "quick", "runs": args.runs, "warmup": 1, "n_predict": args.tokens},
        **config,
    }
    if args.ngl is not None:
        data["n_gpu_layers"] = args.ngl
    return run_benchmark(parse_config(data), models_dir=model.parent).model_dump(mode="json")


def line(label: str, result: dict) -> float:
    summary = result["summary"]
    decode = summary["decode_tokens_per_second"]
    accepted = summary["acceptance_rate"]
    print(
        f"{label:<34} {decode['mean']:9.1f} tok/s [{decode['ci95_low']:.1f}, "
        f"{decode['ci95_high']:.1f}] n={decode['n']}"
        + (f", acceptance {accepted:.0%}, tau {summary['tau']:.2f}" if accepted is not None else "")
    )
    return decode["mean"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ngl", type=int)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        model = args.model or write_fixtures(Path(scratch))["tiny-qwen3.gguf"]
        model = model.resolve()
        print(f"model {model.name}, {args.threads} threads, {args.runs} x {args.tokens} tokens")
        server = line("llama-server baseline", measure(model, args))
        inprocess = line(
            "llama-cpp-python baseline", measure(model, args, engine="llama-cpp-python")
        )
        line(
            "llama-cpp-python prompt-lookup",
            measure(model, args, engine="llama-cpp-python", spec_types="prompt-lookup", n_max=8),
        )
        for spec in ("ngram-simple", "ngram-mod"):
            line(f"llama-server {spec}", measure(model, args, spec_types=spec))
        print(f"inprocess_over_server_baseline={inprocess / server:.3f}")


if __name__ == "__main__":
    main()
