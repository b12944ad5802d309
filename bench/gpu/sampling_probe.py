"""Which llama-server options and request bodies decode closest to llama-bench, with the same tokens?

For each server option set (plain, GPU-side sampling `-bs`, one slot `-np 1`) and each request
body (the runner's own, a minimal greedy one, a top-k-only chain, the runner's without
ignore_eos), sends a fixed prompt of exact token ids at one depth and records the server's decode
tok/s, the generated token ids' hash and any error, so a change of the runner's defaults can be
argued from one run. Ends with llama-bench's token generation at the same depth and build.

    python bench/gpu/sampling_probe.py --server BIN --model 8b.gguf --depth 512 --tokens 256
The last line is the headline: best_ratio=<fastest option set with unchanged tokens / llama-bench>.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runner.engines.build import from_binary, llama_bench  # noqa: E402
from runner.engines.server import free_port  # noqa: E402
from runner.gguf.inspect import inspect_model  # noqa: E402
from runner.protocols import RequestSpec  # noqa: E402

SERVER_OPTIONS = {
    "plain": [],
    "bs": ["-bs"],
    "plain np1": ["-np", "1"],
    "bs np1": ["-bs", "-np", "1"],
}


def bodies(prompt: list[int], tokens: int) -> dict[str, dict]:
    runner = RequestSpec("measure", 0, len(prompt), tokens, prompt, 42, stream=False).body()
    return {
        "runner": runner,
        "minimal": {
            "prompt": prompt,
            "n_predict": tokens,
            "temperature": 0.0,
            "ignore_eos": True,
            "cache_prompt": False,
            "return_tokens": True,
        },
        "top_k only": runner | {"samplers": ["top_k"]},
        "runner, eos allowed": {k: v for k, v in runner.items() if k != "ignore_eos"},
    }


def serve(server: str, model: Path, extra: list[str], *, ngl: str, ctx: int):
    port = free_port()
    argv = [server, "-m", str(model), "--port", str(port), "--host", "127.0.0.1"]
    argv += ["-c", str(ctx), "-ngl", ngl, "-fa", "on", "--no-webui", *extra]
    log = open(f"/tmp/probe-{port}.log", "w")
    env = dict(os.environ, LD_LIBRARY_PATH=str(Path(server).parent))
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {Path(log.name).read_text()[-2000:]}")
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return process, base, Path(log.name)
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    process.kill()
    raise RuntimeError("server did not become ready")


def measure(base: str, body: dict, reps: int) -> dict:
    speeds, hashes, counts, error = [], set(), [], ""
    for index in range(reps + 1):
        response = httpx.post(f"{base}/completion", json=body, timeout=300)
        data = response.json()
        if response.status_code != 200 or "error" in data:
            error = json.dumps(data.get("error", data))[:300]
            break
        tokens = data.get("tokens") or []
        timings = data.get("timings") or {}
        if index == 0:
            continue  # warm-up
        speeds.append(timings.get("predicted_per_second"))
        counts.append(len(tokens))
        hashes.add(hashlib.sha256(json.dumps(tokens).encode()).hexdigest()[:12])
    real = [s for s in speeds if s]
    return {
        "decode": statistics.mean(real) if real else None,
        "tokens": counts,
        "hash": ",".join(sorted(hashes)),
        "error": error or ("" if real else "no timings in the response"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--depth", type=int, default=512)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--ngl", default="999")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument(
        "--options",
        nargs="+",
        metavar="NAME=FLAGS",
        help="server option sets to probe instead of the built-in ones, e.g. 'bs=-bs -np 1'; "
        "the first is the reference the others' tokens are compared with",
    )
    parser.add_argument(
        "--bodies", nargs="+", help="request bodies to send (default: all), e.g. runner"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="probe every option set this many times, the order reversed each round, and "
        "average each set's decode over the rounds",
    )
    args = parser.parse_args()
    options = dict(_option_set(text) for text in args.options) if args.options else SERVER_OPTIONS

    vocab = inspect_model(args.model).vocab_size
    rng = np.random.default_rng(7)
    prompt = rng.integers(min(1000, vocab // 4), vocab - 1, size=args.depth).tolist()
    ctx = args.depth + args.tokens + 256
    results: dict[tuple[str, str], dict] = {}
    order = list(options.items())
    wanted = bodies(prompt, args.tokens)
    if args.bodies:
        wanted = {name: wanted[name] for name in args.bodies}
    for round_index in range(args.rounds):
        for option_name, extra in order if round_index % 2 == 0 else order[::-1]:
            _probe(args, option_name, extra, wanted, results, ctx=ctx)
    rows = llama_bench(
        from_binary(args.server), args.model, depths=[args.depth], tokens=args.tokens, reps=3,
        n_gpu_layers=int(args.ngl), threads=args.threads,
    )  # fmt: skip
    bench = float(rows[0]["avg_ts"])
    print(f"llama-bench tg{args.tokens} at depth {args.depth}: {bench:.2f} tok/s")
    first = next(iter(options))
    reference = results.get((first, "runner"), {}).get("hash")
    best = 0.0
    for (option_name, body_name), row in results.items():
        if row["decode"]:
            same = row["hash"] == reference
            print(
                f"ratio {option_name} / {body_name}: {row['decode'] / bench:.3f} over "
                f"{row['rounds']} round(s) ({'same tokens as' if same else 'DIFFERENT tokens from'}"
                f" {first}/runner)"
            )
            if same:
                best = max(best, row["decode"] / bench)
    print(f"best_ratio={best:.3f}")


def _option_set(text: str) -> tuple[str, list[str]]:
    name, _, flags = text.partition("=")
    return name.strip(), flags.split()


def _probe(args, option_name: str, extra: list[str], wanted: dict, results: dict, *, ctx: int):
    """One server with these options: each body measured, its decode averaged into results."""
    try:
        process, base, log = serve(args.server, args.model, extra, ngl=args.ngl, ctx=ctx)
    except RuntimeError as error:
        print(f"{option_name}: server failed: {error}", flush=True)
        return
    try:
        for body_name, body in wanted.items():
            row = measure(base, body, args.reps)
            own = row["decode"]
            earlier = results.get((option_name, body_name))
            if earlier and earlier["decode"] and row["decode"]:
                rounds = earlier["rounds"] + 1
                row["decode"] = earlier["decode"] + (row["decode"] - earlier["decode"]) / rounds
                row["rounds"] = rounds
                if row["hash"] != earlier["hash"]:
                    row["hash"] = earlier["hash"] + "|" + row["hash"]
            else:
                row["rounds"] = 1
            results[(option_name, body_name)] = row
            speed = f"{own:8.2f}" if own else "    none"
            print(
                f"{option_name:>10} | {body_name:>20} | decode {speed} tok/s | tokens "
                f"{row['tokens']} | hash {row['hash']} | {row['error']}",
                flush=True,
            )
    finally:
        process.terminate()
        process.wait(timeout=30)
    warnings = [line for line in log.read_text().splitlines() if "sampl" in line.lower()][:8]
    for line in warnings:
        print(f"    log: {line[:200]}")


if __name__ == "__main__":
    main()
