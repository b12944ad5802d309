"""Train Specboard's DFlash draft for SmolLM2-135M-Instruct on one GPU, then export it.

    python training/dflash/train.py --target SmolLM2-135M-Instruct.Q4_1.gguf \
        --data .device/dflash/tokens.json --out out/ --minutes 5

Stages, each timed and logged to out/train-log.json:
1. data: the target's own greedy answers (model.Target.generate) to the project's prompts
   (prompts.py, tokenized by make_data.py with llama-server's own tokenizer);
2. training: each step runs the target over a batch of prompt+answer sequences for its layer
   inputs, picks anchors in the answers, and trains the draft to denoise [x_a, mask x 15] into
   x_{a+1..a+15} (cross-entropy, position i weighted exp(-(i-1)/7) as DFlash does);
3. evaluation: tau (1 + accepted drafts per verify step, greedy, n_max 15) on held-out answers
   and on the measured suite's prompts, simulated exactly as llama-server drafts;
4. export: the draft as a Q8_0 ``dflash`` GGUF (model.export_gguf) and a bf16 checkpoint.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))

from model import (  # noqa: E402
    BLOCK_SIZE,
    DFlashDraft,
    DraftConfig,
    Target,
    block_inputs,
    export_gguf,
    load_draft_gguf,
    read_target,
)

STOP = {0, 2}  # <|endoftext|>, <|im_end|>
MASK_TOKEN = 4  # a special token no answer contains; its embedding marks the masked positions
DECAY = 7.0
SEED = 20261207


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def generate_data(target: Target, prompts: list[list[int]], max_new: int, batch: int) -> list[dict]:
    """Greedy answers, batched by length so that a batch's attention fits (B x T^2 bounded)."""
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    out = []
    start = 0
    while start < len(order):
        longest = len(prompts[order[min(start + batch, len(order)) - 1]]) + max_new
        size = max(1, min(batch, int(4e8 // (longest * longest))))
        idx = order[start : start + size]
        start += size
        answers = target.generate([prompts[i] for i in idx], max_new, STOP)
        for i, answer in zip(idx, answers, strict=False):
            out.append({"prompt": prompts[i], "answer": answer})
    return out


def make_batch(rows: list[dict], device: str, max_len: int):
    seqs = [(r["prompt"] + r["answer"])[:max_len] for r in rows]
    length = max(len(s) for s in seqs)
    tokens = torch.zeros(len(seqs), length, dtype=torch.long)
    lengths = torch.tensor([len(s) for s in seqs])
    starts = torch.tensor(
        [min(len(r["prompt"]), len(s) - 2) for r, s in zip(rows, seqs, strict=False)]
    )
    for j, s in enumerate(seqs):
        tokens[j, : len(s)] = torch.tensor(s)
    return tokens.to(device), lengths.to(device), starts.to(device)


def sample_anchors(lengths, starts, k: int, gen: torch.Generator) -> torch.Tensor:
    """k anchor positions per row in [start, length - 2]: a token of the answer with a successor."""
    span = (lengths - 1 - starts).clamp(min=1).float()
    u = torch.rand(lengths.shape[0], k, generator=gen, device="cpu").to(lengths.device)
    return (starts[:, None] + (u * span[:, None]).long()).clamp(max=(lengths - 2)[:, None])


def draft_logits(draft, target, tokens, lengths, anchors, embed, block_size=BLOCK_SIZE):
    """The draft's logits (B, K, block_size, V) for blocks at anchors (B, K), and its inputs."""
    features, _ = target.features(tokens, lengths)
    inputs = block_inputs(anchors, tokens, block_size, draft.c.mask_token_id, tokens.shape[1])
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=tokens.is_cuda):
        hidden = draft(
            features.to(torch.bfloat16) if tokens.is_cuda else features,
            inputs["context_ok"],
            inputs["block_tokens"],
            inputs["block_pos"],
            inputs["block_id"],
            embed,
        )
        logits = hidden @ embed.T
    b, k = anchors.shape
    return logits.view(b, k, block_size, -1), inputs


def loss_of(logits, inputs, anchors, lengths):
    labels = inputs["labels"][:, :, 1:]
    pos = anchors[:, :, None] + torch.arange(1, BLOCK_SIZE, device=anchors.device)
    valid = pos < lengths[:, None, None]
    weights = torch.exp(-(torch.arange(BLOCK_SIZE - 1, device=anchors.device)) / DECAY)
    ce = F.cross_entropy(logits[:, :, 1:].float().flatten(0, 2), labels.flatten(), reduction="none")
    ce = ce.view(labels.shape)
    w = valid * weights
    return (ce * w).sum() / w.sum()


@torch.no_grad()
def simulated_tau(draft, target, rows, embed, device, n_max=15, max_len=1024) -> dict:
    """Speculative decoding replayed on the target's greedy continuation, as llama-server does it.

    At each verify step the draft sees the target's layer inputs of every token before pos0 and
    the block [x_pos0, mask x n_max]; its greedy proposals are accepted while they equal the
    target's own next tokens; the step then advances by accepted + 1. Returns tau
    (1 + accepted per step), steps, and acceptance per block position.
    """
    steps = accepted = 0
    per_pos = [0] * n_max
    per_pos_seen = [0] * n_max
    for r in rows:
        seq = (r["prompt"] + r["answer"])[:max_len]
        if len(r["answer"]) < 2:
            continue
        tokens = torch.tensor([seq], device=device)
        lengths = torch.tensor([len(seq)], device=device)
        pos0 = len(r["prompt"])
        # all anchors at once: each block only reads context before its own anchor
        anchors = torch.tensor([list(range(pos0, len(seq) - 1))], device=device)
        logits, _ = draft_logits(
            draft, target, tokens, lengths, anchors, embed, block_size=n_max + 1
        )
        proposals = logits[0, :, 1:].argmax(-1)
        proposals = proposals.tolist()
        p = pos0
        while p < len(seq) - 1:
            prop = proposals[p - pos0]
            n = 0
            while n < n_max and p + 1 + n < len(seq) and prop[n] == seq[p + 1 + n]:
                n += 1
            for i in range(min(n + 1, n_max)):
                if p + 1 + i < len(seq):
                    per_pos_seen[i] += 1
                    per_pos[i] += int(i < n)
            steps += 1
            accepted += n
            p += n + 1
    return {
        "tau": 1 + accepted / max(steps, 1),
        "steps": steps,
        "accepted": accepted,
        "acceptance_by_position": [
            round(a / s, 4) if s else None for a, s in zip(per_pos, per_pos_seen, strict=False)
        ],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", type=Path, required=True)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument(
        "--deadline-s", type=float, default=0, help="whole run's wall budget: train less to fit"
    )
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--max-new", type=int, default=256)
    ap.add_argument("--gen-batch", type=int, default=512)
    ap.add_argument("--batch", type=int, default=48)
    ap.add_argument("--anchors", type=int, default=24)
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--limit-prompts", type=int, default=0)
    ap.add_argument(
        "--limit-suite", type=int, default=0, help="every Nth suite prompt (smoke runs)"
    )
    ap.add_argument(
        "--init", type=Path, help="continue from this exported draft GGUF (a later GPU stretch)"
    )
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(SEED)
    random.seed(SEED)
    device = args.device
    report: dict = {"args": {k: str(v) for k, v in vars(args).items()}, "seed": SEED}
    t0 = time.time()

    config, weights, kv = read_target(
        args.target, device, torch.float32 if device == "cpu" else torch.bfloat16
    )
    target = Target(config, weights)
    embed = weights["token_embd.weight"]
    data = json.loads(args.data.read_text())
    prompts = data["train"]
    if args.limit_prompts:
        prompts = prompts[: args.limit_prompts]
    log(f"target loaded ({time.time() - t0:.1f}s); {len(prompts)} training prompts")

    t1 = time.time()
    rows = generate_data(target, prompts, args.max_new, args.gen_batch)
    answer_tokens = sum(len(r["answer"]) for r in rows)
    report["data"] = {
        "prompts": len(rows),
        "answer_tokens": answer_tokens,
        "seconds": round(time.time() - t1, 1),
        "max_new": args.max_new,
    }
    log(f"generated {answer_tokens} answer tokens in {time.time() - t1:.1f}s")
    suite_prompts = data["suite"][:: args.limit_suite] if args.limit_suite else data["suite"]
    suite_rows = generate_data(
        target, [p["tokens"] for p in suite_prompts], args.max_new, args.gen_batch
    )
    # keep the suite's category next to its generated row
    by_prompt = {tuple(r["prompt"]): r for r in suite_rows}
    suite = [dict(by_prompt[tuple(p["tokens"])], category=p["category"]) for p in suite_prompts]

    rng = random.Random(SEED)
    rng.shuffle(rows)
    n_held = min(64, len(rows) // 4)
    held = rows[:n_held]
    train_rows = [r for r in rows[n_held:] if len(r["answer"]) >= 2]

    draft = DFlashDraft(DraftConfig(n_layer=args.layers, mask_token_id=MASK_TOKEN)).to(device)
    # the draft borrows the target's head: start its final norm at the target's, so the logits
    # start at the target's scale
    with torch.no_grad():
        draft.out_norm.copy_(weights["output_norm.weight"].float())
    if args.init:
        load_draft_gguf(draft, args.init)
        log(f"continuing from {args.init.name}")
    params = sum(p.numel() for p in draft.parameters())
    opt = torch.optim.AdamW(draft.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.01)
    gen = torch.Generator().manual_seed(SEED)
    budget = args.minutes * 60
    if args.deadline_s:
        # leave time for the evaluation and export after training
        budget = max(30.0, min(budget, args.deadline_s - (time.time() - t0) - 75))
    t2 = time.time()
    step = 0
    history = []
    warmup = 100
    while time.time() - t2 < budget:
        frac = (time.time() - t2) / budget
        lr = (
            args.lr
            * min(1.0, (step + 1) / warmup)
            * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        )
        for group in opt.param_groups:
            group["lr"] = lr
        batch_rows = rng.sample(train_rows, min(args.batch, len(train_rows)))
        tokens, lengths, starts = make_batch(batch_rows, device, 768)
        anchors = sample_anchors(lengths, starts, args.anchors, gen)
        logits, inputs = draft_logits(draft, target, tokens, lengths, anchors, embed)
        loss = loss_of(logits, inputs, anchors, lengths)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 100 == 0:
            history.append(
                {"step": step, "loss": round(loss.item(), 4), "seconds": round(time.time() - t2, 1)}
            )
            log(f"step {step} loss {loss.item():.4f} lr {lr:.2e}")
    report["training"] = {
        "steps": step,
        "seconds": round(time.time() - t2, 1),
        "draft_parameters": params,
        "batch_sequences": args.batch,
        "anchors_per_sequence": args.anchors,
        "history": history,
    }
    draft.eval()
    report["tau_held_out_answers"] = simulated_tau(draft, target, held, embed, device)
    report["tau_suite"] = simulated_tau(draft, target, suite, embed, device, max_len=8192)
    by_cat: dict[str, list] = {}
    for r in suite:
        by_cat.setdefault(r["category"], []).append(r)
    report["tau_suite_by_category"] = {
        c: simulated_tau(draft, target, rs, embed, device, max_len=8192)["tau"]
        for c, rs in sorted(by_cat.items())
    }
    log(
        f"tau held-out answers {report['tau_held_out_answers']['tau']:.3f}, suite {report['tau_suite']['tau']:.3f}"
    )

    card = {
        "trained_by": "Specboard training/dflash/train.py",
        "target": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "seed": SEED,
        "steps": step,
        "answer_tokens": answer_tokens,
        "tau_suite_pytorch": round(report["tau_suite"]["tau"], 3),
    }
    if args.init:
        card["continued_from"] = args.init.name
    gguf_path = export_gguf(
        draft,
        kv,
        args.out / "smollm2-135m-dflash-specboard.Q8_0.gguf",
        name="Specboard DFlash draft for SmolLM2-135M-Instruct",
        card=card,
    )
    # bf16, in two files of under 16 MiB each (what a lent GPU's transfer brings back)
    state = {k: v.to(torch.bfloat16) for k, v in draft.state_dict().items()}
    first = {k: v for k, v in state.items() if not k.startswith("layers.1.")}
    torch.save(first, args.out / "draft-checkpoint-a.pt")
    torch.save(
        {k: v for k, v in state.items() if k not in first}, args.out / "draft-checkpoint-b.pt"
    )
    report["export"] = {"gguf": gguf_path.name, "bytes": gguf_path.stat().st_size}
    report["suite_answers"] = [
        {"category": r["category"], "prompt": r["prompt"], "answer": r["answer"]} for r in suite
    ]
    report["total_seconds"] = round(time.time() - t0, 1)
    (args.out / "train-log.json").write_text(json.dumps(report, indent=1))
    log(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
