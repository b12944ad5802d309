"""Tokenize the training prompts and the measured suite with llama-server's own tokenizer.

    python training/dflash/make_data.py --server PATH/llama-server \
        --target SmolLM2-135M-Instruct.Q4_1.gguf --out .device/dflash/tokens.json

Runs where llama.cpp runs (the GPU box has no tokenizer for the target). The training prompts
come from prompts.py (seeded); any that shares a 40-character run with a measured prompt is
dropped, and the count dropped is recorded. The suite's prompts are tokenized too, with their
categories, for the held-out tau that train.py reports; they are never trained on.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from prompts import build_prompts, held_out_texts, overlaps_held_out  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, path: str, body: dict) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--count", type=int, default=12000)
    args = ap.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [
            args.server,
            "-m",
            args.target,
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "-c",
            "512",
            "-t",
            "1",
            "-np",
            "1",
            "--no-repack",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "LD_LIBRARY_PATH": str(Path(args.server).parent)},
    )
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        held_out = held_out_texts(REPO)
        prompts = build_prompts(args.count)
        kept = [
            p
            for p, bad in zip(prompts, overlaps_held_out(prompts, held_out), strict=False)
            if not bad
        ]

        def tokens(text: str) -> list[int]:
            return post(
                port, "/tokenize", {"content": text, "add_special": False, "parse_special": True}
            )["tokens"]

        train = [tokens(p["text"]) for p in kept]
        suite = []
        for category, text in held_out:
            suite.append({"category": category, "tokens": tokens(text)})
    finally:
        server.terminate()
        server.wait()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "recipe": f"training/dflash/prompts.py build_prompts({args.count}), seed in prompts.SEED",
                "dropped_for_overlap": len(prompts) - len(kept),
                "train": train,
                "suite": suite,
            }
        )
    )
    print(
        f"{len(train)} training prompts ({len(prompts) - len(kept)} dropped), {len(suite)} suite prompts"
    )


if __name__ == "__main__":
    main()
