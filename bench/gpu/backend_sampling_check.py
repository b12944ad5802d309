"""Speculative decoding with GPU-side sampling: does the draft still get accepted, and lossless?

Runs a self-draft config (draft-simple with the target as its own draft: every draft token
should be accepted and the output must equal the baseline's token for token) with the target's
GPU-side sampling on and off and the draft's own GPU sampling left to the engine or off, each
with its paired baseline.

    python bench/gpu/backend_sampling_check.py --models DIR --shape qwen3-8b --depth 512
The last line is the headline: self_draft_lossless=<True|False>.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runner.benchmark import run_benchmark  # noqa: E402
from runner.config import parse_config  # noqa: E402
from runner.engines.build import locate  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, required=True)
    parser.add_argument("--shape", default="qwen3-8b")
    parser.add_argument("--depth", type=int, default=512)
    parser.add_argument("--server")
    args = parser.parse_args()
    engine = locate(server=args.server)
    target = f"{args.shape}-random-Q4_K_M.gguf"
    common = {
        "target_model": target,
        "n_gpu_layers": 999,
        "draft_n_gpu_layers": 999,
        "flash_attn": "on",
        "protocol": {
            "name": "depth",
            "depths": [args.depth],
            "output_tokens": 256,
            "requests": 3,
            "warmup": 1,
        },
    }
    self_draft = common | {"draft_model": target, "spec_types": ["draft-simple"], "n_max": 4}
    # Target sampling on the GPU (-bs) and the draft's own GPU sampling, each on and off: the
    # target is its own draft, so every draft token should be accepted in all four.
    configs = {
        f"self-draft n_max 4, -bs {bs}, draft GPU sampling {draft}": self_draft
        | {"backend_sampling": bs, "draft_backend_sampling": draft}
        for bs in (True, False)
        for draft in (None, False)
    }
    lossless = []
    for name, data in configs.items():
        config = parse_config(data)
        result = run_benchmark(config, models_dir=args.models, engine=engine, with_baseline=True)
        summary = result.model_dump(mode="json")["summary"]
        print(
            f"{name}: -bs {config.effective_backend_sampling}, decode "
            f"{summary['decode_tokens_per_second']['mean']:.1f} tok/s, baseline "
            f"{summary['baseline_decode_tokens_per_second']:.1f}, speedup {summary['speedup']:.2f}x, "
            f"acceptance {summary['acceptance_rate']}, lossless {summary['lossless']}, "
            f"degenerate {summary['degenerate']}",
            flush=True,
        )
        lossless.append(summary["lossless"])
    print(f"self_draft_lossless={all(lossless)}")


if __name__ == "__main__":
    main()
