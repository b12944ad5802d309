"""Check that llama-server drafts exactly what the PyTorch draft proposes (the layout check).

    python training/dflash/check_layout.py --server PATH/llama-server \
        --target SmolLM2-135M-Instruct.Q4_1.gguf --draft draft.gguf --checkpoint draft-checkpoint.pt

llama-server runs the pair with DFlash (n_max 15, p_min 0) at debug verbosity, which logs every
draft's candidates and the position it drafted from. The PyTorch draft, given the same prompt
and the server's own greedy output, proposes a block at each of those positions. A draft whose
weights are laid out as b11434 reads them agrees on nearly every proposed token (the rest are
near ties moved by Q8_0 and the target's quantized matmuls); a layout mismatch agrees on almost
none. Prints a JSON summary; exits 1 below --min-agreement.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from model import DFlashDraft, DraftConfig, Target, block_inputs, read_target  # noqa: E402
from train import MASK_TOKEN  # noqa: E402

CANDIDATE = re.compile(r"draft candidate\s+0, pos\s+(\d+):\s+(\d+)")
GENERATE = re.compile(r"generate_draft: id=(\d+), #tokens=(\d+), #draft=(\d+), pos_next=(\d+)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", required=True)
    ap.add_argument("--checkpoint", required=True, help="a file, or a glob of its parts")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--n-predict", type=int, default=96)
    ap.add_argument(
        "--prompt",
        default="<|im_start|>user\nExplain how a lighthouse works.<|im_end|>\n<|im_start|>assistant\n",
    )
    ap.add_argument("--min-agreement", type=float, default=0.8)
    ap.add_argument("--extra", default="", help="more llama-server flags, e.g. '-ngl 99'")
    args = ap.parse_args()

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_path = Path(tempfile.mkstemp(suffix=".log")[1])
    cmd = [
        args.server,
        "-m",
        args.target,
        "-md",
        args.draft,
        "--spec-type",
        "draft-dflash",
        "--spec-draft-n-max",
        "15",
        "--spec-draft-p-min",
        "0",
        "-np",
        "1",
        "-c",
        "2048",
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
        "-v",
        *args.extra.split(),
    ]
    if "-ngl" not in args.extra:
        cmd += ["-t", "2", "--no-repack"]
    env = {**os.environ, "LD_LIBRARY_PATH": str(Path(args.server).parent)}
    with log_path.open("w") as log:
        server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                if server.poll() is not None:
                    sys.exit(f"llama-server exited: {log_path.read_text()[-2000:]}")
                time.sleep(0.5)

        def post(path: str, body: dict) -> dict:
            req = urllib.request.Request(
                f"http://127.0.0.1:{port}{path}",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(req, timeout=600) as r:
                return json.loads(r.read())

        prompt = post("/tokenize", {"content": args.prompt, "parse_special": True})["tokens"]
        done = post(
            "/completion",
            {
                "prompt": prompt,
                "n_predict": args.n_predict,
                "temperature": 0,
                "top_k": 1,
                "cache_prompt": False,
                "return_tokens": True,
                "ignore_eos": True,
            },
        )
    finally:
        server.terminate()
        server.wait()
    output = done["tokens"]
    text = log_path.read_text()
    drafts: list[list[int]] = []
    for line in text.splitlines():
        m = CANDIDATE.search(line)
        if m:
            pos, tok = int(m.group(1)), int(m.group(2))
            if pos == 0:
                drafts.append([])
            drafts[-1].append(tok)
    starts = [(int(m.group(1)), int(m.group(4))) for m in GENERATE.finditer(text)]

    seq = prompt + output
    config, weights, _ = read_target(Path(args.target), "cpu", torch.float32)
    target = Target(config, weights)
    draft = DFlashDraft(DraftConfig(n_layer=args.layers, mask_token_id=MASK_TOKEN))
    state = {}
    for part in sorted(Path(args.checkpoint).parent.glob(Path(args.checkpoint).name)):
        state |= torch.load(part, map_location="cpu")
    draft.load_state_dict({k: v.float() for k, v in state.items()})
    draft.eval()
    tokens = torch.tensor([seq])
    features, _ = target.features(tokens, torch.tensor([len(seq)]))
    # the server drafts before it knows how many tokens it will verify; pair each draft with the
    # position it was drafted from (generate_draft's pos_next)
    compared = agreed = 0
    id_checks = 0
    for draft_tokens, (sampled, pos0) in zip(drafts, starts, strict=False):
        if pos0 >= len(seq):
            break
        id_checks += int(seq[pos0] == sampled)
        inputs = block_inputs(torch.tensor([[pos0]]), tokens, 16, MASK_TOKEN, len(seq))
        with torch.no_grad():
            hidden = draft(
                features,
                inputs["context_ok"],
                inputs["block_tokens"],
                inputs["block_pos"],
                inputs["block_id"],
                weights["token_embd.weight"],
            )
        mine = (hidden @ weights["token_embd.weight"].T).argmax(-1)[0, 1:].tolist()
        for a, b in zip(draft_tokens, mine, strict=False):
            compared += 1
            agreed += int(a == b)
    # and the PyTorch target's own greedy answer against the server's (same weights, same math)
    ours = target.generate([prompt], len(output), set())[0]
    same_prefix = next(
        (i for i, (a, b) in enumerate(zip(ours, output, strict=False)) if a != b), len(output)
    )
    report = {
        "target_greedy_same_prefix": same_prefix,
        "target_greedy_tokens": len(output),
        "drafts": len(drafts),
        "positions": len(starts),
        "anchor_token_matches": id_checks,
        "tokens_compared": compared,
        "agreement": agreed / max(compared, 1),
        "server_draft_n": done.get("timings", {}).get("draft_n"),
        "server_draft_accepted": done.get("timings", {}).get("draft_n_accepted"),
    }
    print(json.dumps(report))
    if report["agreement"] < args.min_agreement:
        sys.exit(1)


if __name__ == "__main__":
    main()
