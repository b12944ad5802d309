"""llama-cpp-python in this process: the second engine, measured by the same protocols.

Its Python API has no draft-model or DFlash speculative decoding, only prompt-lookup drafting,
so it runs the baseline and `prompt-lookup` configs. Timings follow the server's definitions:
prompt time until the first generated token, then predicted_n tokens over the time from the
first token to the last; decode tok/s = (predicted_n - 1) / predicted_ms
(runner.stats.decode_rate).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from runner.config import PROMPT_LOOKUP, BenchmarkConfig
from runner.engines.build import Engine
from runner.engines.measure import SpecCounters, build_record
from runner.errors import EngineBuildError
from runner.fidelity import MAX_MARGIN, TopTwo
from runner.gguf.inspect import ModelInfo
from runner.protocols import RequestSpec

PACKAGE_HINT = (
    "engine llama-cpp-python needs the optional extra: pip install 'specboard[inprocess]' "
    "(it builds llama-cpp-python from its source distribution)"
)


def _load_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError:
        raise EngineBuildError(PACKAGE_HINT) from None
    return llama_cpp


def describe_engine() -> Engine:
    """The in-process engine as results record it: the binding's version and its backend."""
    llama_cpp = _load_llama_cpp()
    version = getattr(llama_cpp, "__version__", "unknown")
    offload = bool(llama_cpp.llama_supports_gpu_offload())
    return Engine(
        server_path="(in process)",
        release=f"llama-cpp-python-{version}",
        backend="gpu" if offload else "cpu",
        build_flags=[],
        source="python",
    )


class _CountingDraft:
    """Wraps the prompt-lookup drafter to count drafts; the verify loop itself is the library's."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0
        self.drafted = 0
        self.verify_steps = 0

    def __call__(self, input_ids: Any, /, **kwargs: Any) -> Any:
        draft = self.inner(input_ids, **kwargs)
        self.calls += 1
        self.drafted += len(draft)
        # A non-empty draft is verified by the target's next batch: one verify step.
        self.verify_steps += bool(len(draft))
        return draft


class InProcessSession:
    """One llama_cpp.Llama for one config, measured in this process."""

    def __init__(self, config: BenchmarkConfig, *, target: ModelInfo) -> None:
        self.config = config
        self.target = target
        self.llama_cpp = _load_llama_cpp()
        self.argv = ["llama_cpp.Llama", *self._describe()]
        self.command = "python: " + " ".join(self.argv)
        self._load_seconds: float | None = None
        self._llm: Any = None
        self._draft: _CountingDraft | None = None

    def _describe(self) -> list[str]:
        config = self.config
        parts = [
            f"model_path={self.target.path}",
            f"n_ctx={config.effective_ctx_size}",
            f"n_threads={config.threads}",
            f"n_gpu_layers={config.n_gpu_layers or 0}",
            f"flash_attn={config.flash_attn == 'on'}",
        ]
        if PROMPT_LOOKUP in config.spec_types:
            parts.append(
                f"draft_model=LlamaPromptLookupDecoding(num_pred_tokens={config.n_max or 10})"
            )
        return parts

    @property
    def pid(self) -> int:
        return os.getpid()

    @property
    def load_seconds(self) -> float | None:
        return self._load_seconds

    def start(self) -> None:
        config = self.config
        draft = None
        if PROMPT_LOOKUP in config.spec_types:
            from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

            self._draft = _CountingDraft(
                LlamaPromptLookupDecoding(num_pred_tokens=config.n_max or 10)
            )
            draft = self._draft
        started = time.monotonic()
        self._llm = self.llama_cpp.Llama(
            model_path=self.target.path,
            n_ctx=config.effective_ctx_size,
            n_threads=config.threads,
            n_gpu_layers=config.n_gpu_layers or 0,
            flash_attn=config.flash_attn == "on",
            draft_model=draft,
            verbose=False,
        )
        self._load_seconds = time.monotonic() - started

    def _prompt_tokens(self, spec: RequestSpec) -> list[int]:
        if isinstance(spec.prompt, list):
            return list(spec.prompt)
        return list(self._llm.tokenize(spec.prompt.encode(), add_bos=True))

    def top_two(self, spec: RequestSpec) -> list[TopTwo]:
        """The top two tokens at each position, decoding greedily one token a step as the
        measured baseline does, reading each step's logits (an unmeasured pass)."""
        return self._greedy_top_two(self._prompt_tokens(spec), spec.output_tokens)

    def continued_top_two(self, spec: RequestSpec, prefix: Sequence[int]) -> list[TopTwo]:
        """The top two at each position after the prompt and ``prefix`` (output token ids),
        continued greedily to the request's end (an unmeasured pass)."""
        return self._greedy_top_two(
            [*self._prompt_tokens(spec), *prefix], spec.output_tokens - len(prefix)
        )

    def _greedy_top_two(self, tokens: list[int], count: int) -> list[TopTwo]:
        import numpy as np

        llm = self._llm
        llm.reset()
        llm.eval(tokens)
        positions = []
        for _ in range(count):
            pointer = self.llama_cpp.llama_get_logits_ith(llm.ctx, -1)
            logits = np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),))
            token = int(np.argmax(logits))
            others = logits.copy()
            others[token] = -np.inf
            runner_up = int(np.argmax(others))
            margin = min(float(logits[token] - logits[runner_up]), MAX_MARGIN)
            positions.append(TopTwo(token, runner_up, margin))
            llm.eval([token])
        return positions

    def measure(self, spec: RequestSpec) -> dict[str, Any]:
        llm = self._llm
        prompt = self._prompt_tokens(spec)
        # Prompt cache off: forget every cached token before each request.
        llm.reset()
        calls_before = self._draft.calls if self._draft else 0
        drafted_before = self._draft.drafted if self._draft else 0
        steps_before = self._draft.verify_steps if self._draft else 0
        tokens: list[int] = []
        started = time.perf_counter()
        first_at = started
        generator = llm.generate(
            prompt, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0, reset=True
        )
        for token in generator:
            if not tokens:
                first_at = time.perf_counter()
            tokens.append(int(token))
            if len(tokens) >= spec.output_tokens:
                break
        generator.close()
        finished = time.perf_counter()
        counters = SpecCounters()
        if self._draft is not None:
            # Every target batch (the prompt's, then one per draft call) yields one token of
            # its own plus the drafts it accepted; the rest of the tokens are accepted drafts.
            batches = 1 + self._draft.calls - calls_before
            accepted = max(0, len(tokens) - batches)
            counters = SpecCounters(
                draft_tokens=float(self._draft.drafted - drafted_before),
                accepted_tokens=float(accepted),
                verify_steps=float(self._draft.verify_steps - steps_before),
            )
        timings = {
            "prompt_n": len(prompt),
            "prompt_ms": (first_at - started) * 1000.0,
            "predicted_n": len(tokens),
            "predicted_ms": (finished - first_at) * 1000.0,
        }
        if counters.draft_tokens:
            timings |= {
                "draft_n": int(counters.draft_tokens),
                "draft_n_accepted": int(counters.accepted_tokens),
            }
        return build_record(
            spec=spec,
            timings=timings,
            tokens=tokens,
            wall_s=finished - started,
            ttft_s=first_at - started,
            counters=counters,
            ttft_source="in process",
            text=self._llm.detokenize(tokens).decode("utf-8", "replace"),
        )

    def stop(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None

    def log_text(self) -> str:
        return ""

    def recent_log(self) -> str:
        return ""
