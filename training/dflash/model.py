"""The target and the DFlash draft in PyTorch, laid out exactly as llama.cpp b11434 reads them.

The target is SmolLM2-135M-Instruct read from its GGUF (llama architecture, rope type NORM: the
converter permuted Q and K so that adjacent pairs rotate). The draft follows
``src/models/dflash.cpp`` and ``common/speculative.cpp`` of b11434:

- the target's features are the *inputs* of the layers named in ``dflash.target_layers``
  (``t_layer_inp[il]``, the residual stream before layer il), concatenated per token;
- the encoder fuses them: ``g = rms_norm(fc(features)) * enc.output_norm``; each draft layer
  writes ``K = rope(k_norm(wk g))`` and ``V = wv g`` into its KV cache at the token's position
  (no attn_norm on this path);
- a drafting block is ``[last token, mask x n]`` at positions ``pos0 .. pos0+n``; every layer is
  attn_norm, Q/K/V, per-head q_norm/k_norm, NeoX rope, non-causal attention over the injected
  context (positions below pos0) and the whole block, wo, residual, ffn_norm, SwiGLU, residual;
- the block's hidden states go through output_norm and the target's output head (SmolLM2 ties it
  to token_embd); the logits at block position i (i >= 1) propose the token at pos0 + i.

Nothing here is imported by the site or the runner: it runs where PyTorch is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# the inputs of these target layers feed the draft (dflash.target_layers, llama.cpp's numbering)
TARGET_LAYERS = (2, 9, 15, 21, 28)
BLOCK_SIZE = 16


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    x32 = x.float()
    out = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    if weight is not None:
        out = out * weight.float()
    return out.to(x.dtype)


def rope_tables(
    positions: torch.Tensor, dim: int, base: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of shape positions.shape + (dim // 2,)."""
    inv = base ** (-torch.arange(0, dim, 2, device=positions.device, dtype=torch.float32) / dim)
    angles = positions.float()[..., None] * inv
    return angles.cos(), angles.sin()


def rope_norm(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """llama.cpp's NORM rope: rotate adjacent pairs. x (..., T, H, D), cos/sin (..., T, D/2)."""
    x0, x1 = x.float()[..., 0::2], x.float()[..., 1::2]
    c, s = cos[..., None, :], sin[..., None, :]
    out = torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2)
    return out.to(x.dtype)


def rope_neox(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """llama.cpp's NEOX rope: rotate the first half against the second."""
    half = x.shape[-1] // 2
    x0, x1 = x.float()[..., :half], x.float()[..., half:]
    c, s = cos[..., None, :], sin[..., None, :]
    return torch.cat((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).to(x.dtype)


# --- the target ----------------------------------------------------------------------------------


@dataclass
class TargetConfig:
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int
    n_ff: int
    n_vocab: int
    eps: float
    rope_base: float
    head_dim: int = field(init=False)

    def __post_init__(self) -> None:
        self.head_dim = self.n_embd // self.n_head


def dequantized(tensor) -> torch.Tensor:
    """A GGUF tensor (gguf-py's reader) as float32 on the CPU, in PyTorch's dimension order (the
    file lists the fastest-varying dimension first); a copy, so the tensor owns its memory."""
    from gguf.quants import dequantize

    shape = tuple(reversed([int(d) for d in tensor.shape]))
    array = dequantize(tensor.data, tensor.tensor_type).reshape(shape)
    return torch.from_numpy(np.array(array, dtype=np.float32))


def read_target(
    path: Path, device: str, dtype: torch.dtype
) -> tuple[TargetConfig, dict[str, torch.Tensor], dict]:
    """Dequantize every tensor of a llama GGUF; return its config, weights and raw key/values."""
    from gguf import GGUFReader

    reader = GGUFReader(str(path))
    kv = {}
    for key, f in reader.fields.items():
        try:
            kv[key] = f.contents()
        except Exception:  # noqa: BLE001 - a field gguf-py cannot render is not one we read
            continue
    arch = kv["general.architecture"]
    config = TargetConfig(
        n_layer=int(kv[f"{arch}.block_count"]),
        n_embd=int(kv[f"{arch}.embedding_length"]),
        n_head=int(kv[f"{arch}.attention.head_count"]),
        n_head_kv=int(kv[f"{arch}.attention.head_count_kv"]),
        n_ff=int(kv[f"{arch}.feed_forward_length"]),
        n_vocab=len(kv["tokenizer.ggml.tokens"]),
        eps=float(kv[f"{arch}.attention.layer_norm_rms_epsilon"]),
        rope_base=float(kv[f"{arch}.rope.freq_base"]),
    )
    weights = {}
    for t in reader.tensors:
        weights[t.name] = dequantized(t).to(device, dtype)
    if "output.weight" not in weights:
        weights["output.weight"] = weights["token_embd.weight"]
    return config, weights, kv


class Target:
    """A plain forward of the llama graph, with the layer inputs that DFlash reads."""

    def __init__(self, config: TargetConfig, weights: dict[str, torch.Tensor]) -> None:
        self.c = config
        self.w = weights

    def _layer(self, i: int, x: torch.Tensor, cos, sin, attend) -> torch.Tensor:
        c, w = self.c, self.w
        b, t, _ = x.shape
        h = rms_norm(x, w[f"blk.{i}.attn_norm.weight"], c.eps)
        q = (h @ w[f"blk.{i}.attn_q.weight"].T).view(b, t, c.n_head, c.head_dim)
        k = (h @ w[f"blk.{i}.attn_k.weight"].T).view(b, t, c.n_head_kv, c.head_dim)
        v = (h @ w[f"blk.{i}.attn_v.weight"].T).view(b, t, c.n_head_kv, c.head_dim)
        q, k = rope_norm(q, cos, sin), rope_norm(k, cos, sin)
        out = attend(i, q, k, v)
        x = x + out.reshape(b, t, -1) @ w[f"blk.{i}.attn_output.weight"].T
        h = rms_norm(x, w[f"blk.{i}.ffn_norm.weight"], c.eps)
        gate = F.silu(h @ w[f"blk.{i}.ffn_gate.weight"].T) * (h @ w[f"blk.{i}.ffn_up.weight"].T)
        return x + gate @ w[f"blk.{i}.ffn_down.weight"].T

    @torch.no_grad()
    def features(
        self, tokens: torch.Tensor, lengths: torch.Tensor, layers=TARGET_LAYERS
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Causal forward of right-padded sequences: (concatenated layer inputs, logits)."""
        c = self.c
        b, t = tokens.shape
        positions = torch.arange(t, device=tokens.device).expand(b, t)
        cos, sin = rope_tables(positions, c.head_dim, c.rope_base)
        causal = torch.ones(t, t, dtype=torch.bool, device=tokens.device).tril()

        def attend(_i, q, k, v):
            return F.scaled_dot_product_attention(
                q.transpose(1, 2),
                k.transpose(1, 2),
                v.transpose(1, 2),
                attn_mask=causal,
                enable_gqa=True,
            ).transpose(1, 2)

        x = self.w["token_embd.weight"][tokens]
        taken = []
        for i in range(c.n_layer):
            if i in layers:
                taken.append(x)
            x = self._layer(i, x, cos, sin, attend)
        x = rms_norm(x, self.w["output_norm.weight"], c.eps)
        logits = x @ self.w["output.weight"].T
        return torch.cat(taken, dim=-1), logits

    @torch.no_grad()
    def generate(self, prompts: list[list[int]], max_new: int, stop: set[int]) -> list[list[int]]:
        """Greedy answers to left-padded prompts with a KV cache (one step for all at once)."""
        c, dev = self.c, self.w["token_embd.weight"].device
        b = len(prompts)
        p_len = max(len(p) for p in prompts)
        total = p_len + max_new
        tokens = torch.zeros(b, p_len, dtype=torch.long, device=dev)
        valid = torch.zeros(b, total, dtype=torch.bool, device=dev)
        for j, p in enumerate(prompts):
            tokens[j, p_len - len(p) :] = torch.tensor(p, device=dev)
            valid[j, p_len - len(p) :] = True
        pads = p_len - torch.tensor([len(p) for p in prompts], device=dev)
        k_cache = torch.zeros(
            c.n_layer,
            b,
            total,
            c.n_head_kv,
            c.head_dim,
            device=dev,
            dtype=self.w["token_embd.weight"].dtype,
        )
        v_cache = torch.zeros_like(k_cache)

        def run(x_tokens: torch.Tensor, start: int) -> torch.Tensor:
            t = x_tokens.shape[1]
            positions = (torch.arange(start, start + t, device=dev)[None, :] - pads[:, None]).clamp(
                min=0
            )
            cos, sin = rope_tables(positions, c.head_dim, c.rope_base)
            keys_ok = valid[:, : start + t]
            q_pos = torch.arange(start, start + t, device=dev)
            k_pos = torch.arange(start + t, device=dev)
            mask = (k_pos[None, :] <= q_pos[:, None])[None, None] & keys_ok[:, None, None, :]

            def attend(i, q, k, v):
                k_cache[i, :, start : start + t] = k
                v_cache[i, :, start : start + t] = v
                kk = k_cache[i, :, : start + t].transpose(1, 2)
                vv = v_cache[i, :, : start + t].transpose(1, 2)
                return F.scaled_dot_product_attention(
                    q.transpose(1, 2), kk, vv, attn_mask=mask, enable_gqa=True
                ).transpose(1, 2)

            x = self.w["token_embd.weight"][x_tokens]
            for i in range(c.n_layer):
                x = self._layer(i, x, cos, sin, attend)
            x = rms_norm(x[:, -1], self.w["output_norm.weight"], c.eps)
            return (x @ self.w["output.weight"].T).float()

        logits = run(tokens, 0)
        out = torch.zeros(b, max_new, dtype=torch.long, device=dev)
        done = torch.zeros(b, dtype=torch.bool, device=dev)
        stop_t = torch.tensor(sorted(stop), device=dev)
        for s in range(max_new):
            nxt = logits.argmax(-1)
            out[:, s] = nxt
            done |= torch.isin(nxt, stop_t)
            if bool(done.all()):
                out = out[:, : s + 1]
                break
            valid[:, p_len + s] = True
            logits = run(nxt[:, None], p_len + s)
        answers = []
        for row in out.tolist():
            answer = []
            for tok in row:
                answer.append(tok)
                if tok in stop:
                    break
            answers.append(answer)
        return answers


# --- the draft -----------------------------------------------------------------------------------


@dataclass
class DraftConfig:
    n_layer: int = 2
    n_embd: int = 576
    n_head: int = 9
    n_head_kv: int = 3
    n_ff: int = 1536
    eps: float = 1e-5
    rope_base: float = 100000.0
    block_size: int = BLOCK_SIZE
    target_layers: tuple[int, ...] = TARGET_LAYERS
    mask_token_id: int = 0

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


class DraftLayer(nn.Module):
    def __init__(self, c: DraftConfig) -> None:
        super().__init__()
        d, hd = c.n_embd, c.head_dim
        self.attn_norm = nn.Parameter(torch.ones(d))
        self.wq = nn.Linear(d, c.n_head * hd, bias=False)
        self.wk = nn.Linear(d, c.n_head_kv * hd, bias=False)
        self.wv = nn.Linear(d, c.n_head_kv * hd, bias=False)
        self.wo = nn.Linear(c.n_head * hd, d, bias=False)
        self.q_norm = nn.Parameter(torch.ones(hd))
        self.k_norm = nn.Parameter(torch.ones(hd))
        self.ffn_norm = nn.Parameter(torch.ones(d))
        self.gate = nn.Linear(d, c.n_ff, bias=False)
        self.up = nn.Linear(d, c.n_ff, bias=False)
        self.down = nn.Linear(c.n_ff, d, bias=False)


class DFlashDraft(nn.Module):
    def __init__(self, c: DraftConfig) -> None:
        super().__init__()
        self.c = c
        self.fc = nn.Linear(len(c.target_layers) * c.n_embd, c.n_embd, bias=False)
        self.enc_norm = nn.Parameter(torch.ones(c.n_embd))
        self.layers = nn.ModuleList(DraftLayer(c) for _ in range(c.n_layer))
        self.out_norm = nn.Parameter(torch.ones(c.n_embd))
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
        for layer in self.layers:
            nn.init.normal_(layer.wo.weight, std=0.02 / math.sqrt(2 * c.n_layer))
            nn.init.normal_(layer.down.weight, std=0.02 / math.sqrt(2 * c.n_layer))

    def forward(
        self,
        features: torch.Tensor,  # (B, L, n_target * n_embd): the target's layer inputs
        context_ok: torch.Tensor,  # (B, Q, L) bool: block query may read context position
        block_tokens: torch.Tensor,  # (B, Q): [anchor, mask...] per block, blocks concatenated
        block_pos: torch.Tensor,  # (B, Q) positions of the block tokens
        block_id: torch.Tensor,  # (B, Q) which block each query belongs to
        embed: torch.Tensor,  # (V, n_embd) the target's token embeddings
    ) -> torch.Tensor:
        """Hidden states after output_norm for every block token, (B, Q, n_embd)."""
        c = self.c
        b, n_ctx, _ = features.shape
        q_len = block_tokens.shape[1]
        hd = c.head_dim
        g = rms_norm(self.fc(features), self.enc_norm, c.eps)
        ctx_pos = torch.arange(n_ctx, device=features.device).expand(b, n_ctx)
        ccos, csin = rope_tables(ctx_pos, hd, c.rope_base)
        bcos, bsin = rope_tables(block_pos, hd, c.rope_base)
        same_block = block_id[:, :, None] == block_id[:, None, :]
        mask = torch.cat((context_ok, same_block), dim=-1)[:, None]  # (B, 1, Q, L + Q)
        x = embed[block_tokens]
        for layer in self.layers:
            kc = rms_norm(layer.wk(g).view(b, n_ctx, c.n_head_kv, hd), layer.k_norm, c.eps)
            kc = rope_neox(kc, ccos, csin)
            vc = layer.wv(g).view(b, n_ctx, c.n_head_kv, hd)
            h = rms_norm(x, layer.attn_norm, c.eps)
            q = rms_norm(layer.wq(h).view(b, q_len, c.n_head, hd), layer.q_norm, c.eps)
            kb = rms_norm(layer.wk(h).view(b, q_len, c.n_head_kv, hd), layer.k_norm, c.eps)
            vb = layer.wv(h).view(b, q_len, c.n_head_kv, hd)
            q, kb = rope_neox(q, bcos, bsin), rope_neox(kb, bcos, bsin)
            k = torch.cat((kc, kb), dim=1).transpose(1, 2)
            v = torch.cat((vc, vb), dim=1).transpose(1, 2)
            att = F.scaled_dot_product_attention(
                q.transpose(1, 2), k, v, attn_mask=mask, enable_gqa=True
            )
            x = x + layer.wo(att.transpose(1, 2).reshape(b, q_len, -1))
            h = rms_norm(x, layer.ffn_norm, c.eps)
            x = x + layer.down(F.silu(layer.gate(h)) * layer.up(h))
        return rms_norm(x, self.out_norm, c.eps)


def block_inputs(
    anchors: torch.Tensor, tokens: torch.Tensor, block_size: int, mask_token_id: int, n_ctx: int
) -> dict[str, torch.Tensor]:
    """Blocks [x_a, mask * (B-1)] at positions a..a+B-1 for anchors (B, K); labels x_{a+i}."""
    b, k = anchors.shape
    offsets = torch.arange(block_size, device=anchors.device)
    pos = anchors[:, :, None] + offsets  # (B, K, S)
    block_tokens = torch.full_like(pos, mask_token_id)
    block_tokens[:, :, 0] = tokens.gather(1, anchors)
    labels = tokens.gather(1, pos.clamp(max=tokens.shape[1] - 1).flatten(1)).view(b, k, block_size)
    block_id = torch.arange(k, device=anchors.device)[None, :, None].expand(b, k, block_size)
    ctx = torch.arange(n_ctx, device=anchors.device)
    context_ok = ctx[None, None, :] < anchors[:, :, None]  # (B, K, L)
    context_ok = context_ok[:, :, None, :].expand(b, k, block_size, n_ctx)
    return {
        "block_tokens": block_tokens.flatten(1),
        "block_pos": pos.flatten(1),
        "block_id": block_id.flatten(1),
        "context_ok": context_ok.reshape(b, k * block_size, n_ctx),
        "labels": labels,
    }


# --- export --------------------------------------------------------------------------------------


def draft_tensors(draft: DFlashDraft) -> dict[str, tuple[torch.Tensor, bool]]:
    """Each GGUF tensor name of the draft, its parameter, and whether it is stored as Q8_0."""
    tensors: dict[str, tuple[torch.Tensor, bool]] = {
        "fc.weight": (draft.fc.weight, True),
        "enc.output_norm.weight": (draft.enc_norm, False),
        "output_norm.weight": (draft.out_norm, False),
    }
    for i, layer in enumerate(draft.layers):
        tensors |= {
            f"blk.{i}.attn_norm.weight": (layer.attn_norm, False),
            f"blk.{i}.attn_q.weight": (layer.wq.weight, True),
            f"blk.{i}.attn_k.weight": (layer.wk.weight, True),
            f"blk.{i}.attn_v.weight": (layer.wv.weight, True),
            f"blk.{i}.attn_output.weight": (layer.wo.weight, True),
            f"blk.{i}.attn_q_norm.weight": (layer.q_norm, False),
            f"blk.{i}.attn_k_norm.weight": (layer.k_norm, False),
            f"blk.{i}.ffn_norm.weight": (layer.ffn_norm, False),
            f"blk.{i}.ffn_gate.weight": (layer.gate.weight, True),
            f"blk.{i}.ffn_up.weight": (layer.up.weight, True),
            f"blk.{i}.ffn_down.weight": (layer.down.weight, True),
        }
    return tensors


def load_draft_gguf(draft: DFlashDraft, path: Path) -> None:
    """Start from an exported draft (its Q8_0 matrices dequantized): a second stretch of training."""
    from gguf import GGUFReader

    wanted = draft_tensors(draft)
    found = {t.name: t for t in GGUFReader(str(path)).tensors}
    if set(found) != set(wanted):
        raise ValueError(
            f"{path}: tensors differ from this draft's: {sorted(set(found) ^ set(wanted))}"
        )
    with torch.no_grad():
        for name, (param, _quantized) in wanted.items():
            param.copy_(dequantized(found[name]).reshape(param.shape))


def export_gguf(draft: DFlashDraft, target_kv: dict, path: Path, *, name: str, card: dict) -> Path:
    """Write the draft as a b11434 ``dflash`` GGUF, Q8_0 matrices, with the target's tokenizer."""
    import gguf

    c = draft.c
    arch = "dflash"
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(name)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_uint32(f"{arch}.context_length", 8192)
    w.add_uint32(f"{arch}.embedding_length", c.n_embd)
    w.add_uint32(f"{arch}.block_count", c.n_layer)
    w.add_uint32(f"{arch}.feed_forward_length", c.n_ff)
    w.add_uint32(f"{arch}.attention.head_count", c.n_head)
    w.add_uint32(f"{arch}.attention.head_count_kv", c.n_head_kv)
    w.add_uint32(f"{arch}.attention.key_length", c.head_dim)
    w.add_uint32(f"{arch}.attention.value_length", c.head_dim)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", c.eps)
    w.add_float32(f"{arch}.rope.freq_base", c.rope_base)
    w.add_uint32(f"{arch}.block_size", c.block_size)
    w.add_array(f"{arch}.target_layers", list(c.target_layers))
    for key, value in card.items():
        w.add_string(f"specboard.draft.{key}", str(value))
    # the target's vocabulary, so that llama.cpp finds the two compatible, and the mask token
    for key in (
        "tokenizer.ggml.model",
        "tokenizer.ggml.pre",
        "tokenizer.ggml.tokens",
        "tokenizer.ggml.token_type",
        "tokenizer.ggml.merges",
    ):
        value = target_kv[key]
        if isinstance(value, str):
            w.add_string(key, value)
        else:
            w.add_array(key, list(value))
    for key in (
        "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.unknown_token_id",
        "tokenizer.ggml.padding_token_id",
    ):
        if key in target_kv:
            w.add_uint32(key, int(target_kv[key]))
    for key in ("tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_space_prefix"):
        if key in target_kv:
            w.add_bool(key, bool(target_kv[key]))
    w.add_uint32("tokenizer.ggml.mask_token_id", c.mask_token_id)

    for tensor_name, (tensor, quantize) in draft_tensors(draft).items():
        array = tensor.detach().float().cpu().numpy()
        if quantize:
            data = gguf.quants.quantize(array, gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(tensor_name, data, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(tensor_name, array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
