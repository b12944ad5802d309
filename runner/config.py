"""The benchmark config: one pydantic schema, the single validator for CLI, web form and API.

A config's identity is its canonical JSON (sorted keys, defaults filled in, run-time knobs such
as timeouts left out) and the first 16 hex digits of that JSON's sha256.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from runner.errors import ConfigError

# The protocols live in runner.protocols (import their names from there).
from runner.protocols import (
    MAX_CONTEXT,
    Protocol,
    QuickProtocol,
    stored_canonical,
)

# The engine's own names (llama.cpp b11434, common/speculative.cpp).
DRAFT_MODEL_TYPES = ("draft-simple", "draft-eagle3", "draft-dflash", "draft-dspark")
SELF_DRAFT_TYPES = ("draft-mtp",)
NGRAM_TYPES = ("ngram-cache", "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod")
SPEC_TYPES = DRAFT_MODEL_TYPES + SELF_DRAFT_TYPES + NGRAM_TYPES
# llama-cpp-python's own drafting (LlamaPromptLookupDecoding); its only speculative type.
PROMPT_LOOKUP = "prompt-lookup"
ENGINES = ("llama-server", "llama-cpp-python")
KV_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")

ENGINE_DEFAULT_N_MAX = 3  # --spec-draft-n-max when not given
DFLASH_MAX_N_MAX = 15  # block size 16 minus the target token; the engine clamps above this.
MAX_N_MAX = 64
MIN_CONTEXT = 256
# llama.cpp's llama_max_devices() (b11434): GPU indices lie below it, and -ts refuses a list
# of that many proportions (arg.cpp: size >= llama_max_devices() is an error).
MAX_GPUS = 16
SplitMode = Literal["none", "layer", "row"]
SPLIT_MODES: tuple[SplitMode, ...] = ("none", "layer", "row")
ENGINE_DEFAULT_SPLIT_MODE: SplitMode = "layer"
# One GPU's share of a tensor split, before the split is reduced to whole numbers.
_SPLIT_DECIMALS = 4
Proportion = Annotated[float, Field(strict=True, ge=0, le=1e6, allow_inf_nan=False)]
_MODEL_REF = re.compile(r"^[A-Za-z0-9._/\-+]+\.gguf$")


class BenchmarkConfig(BaseModel):
    """Everything that decides what llama-server runs and how it is measured."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: Literal["llama-server", "llama-cpp-python"] = "llama-server"
    target_model: str = Field(min_length=6, max_length=255)
    draft_model: str | None = Field(default=None, min_length=6, max_length=255)
    spec_types: list[str] = Field(default_factory=list, max_length=4)
    n_max: int | None = Field(strict=True, default=None, ge=1, le=MAX_N_MAX)
    n_min: int | None = Field(strict=True, default=None, ge=0, le=MAX_N_MAX)
    p_min: float | None = Field(strict=True, default=None, ge=0.0, le=1.0)
    ctx_size: int | None = Field(strict=True, default=None, ge=MIN_CONTEXT, le=MAX_CONTEXT)
    n_gpu_layers: int | None = Field(strict=True, default=None, ge=0, le=999)
    draft_n_gpu_layers: int | None = Field(strict=True, default=None, ge=0, le=999)
    # The draft's own sampling on the GPU (llama-server's --[no-]spec-draft-backend-sampling);
    # None leaves the engine's default (on in b11434).
    draft_backend_sampling: bool | None = Field(default=None, strict=True)
    # Several GPUs (llama-server's --split-mode, --tensor-split, --main-gpu and
    # --spec-draft-device): how the target is split, in which proportions per GPU, the GPU that
    # holds the whole model with split_mode none (or a row split's K/V and intermediate
    # results), and the one GPU a separate draft model is placed on (else the draft follows the
    # target's split). The defaults are the engine's (layer split in proportion to free memory,
    # GPU 0, the draft beside the target) and are left out of the canonical JSON, so a config
    # that does not ask for them keeps the key it always had.
    split_mode: SplitMode = ENGINE_DEFAULT_SPLIT_MODE
    tensor_split: list[Proportion] | None = Field(
        default=None, min_length=1, max_length=MAX_GPUS - 1
    )
    main_gpu: int = Field(default=0, strict=True, ge=0, lt=MAX_GPUS)
    draft_gpu: int | None = Field(default=None, strict=True, ge=0, lt=MAX_GPUS)
    flash_attn: Literal["auto", "on", "off"] = "auto"
    cache_type_k: Literal[KV_CACHE_TYPES] = "f16"  # type: ignore[valid-type]
    cache_type_v: Literal[KV_CACHE_TYPES] = "f16"  # type: ignore[valid-type]
    threads: int | None = Field(strict=True, default=None, ge=1, le=512)
    # Greedy sampling on the GPU (llama-server's -bs): only the chosen token comes back, not the
    # vocabulary's logits, so per-token time is the engine's (H200, 8B-shaped: 0.95-0.97 of
    # llama-bench against 0.88-0.90 without, same tokens; docs/PERFORMANCE.md). None: on for
    # llama-server.
    backend_sampling: bool | None = Field(default=None, strict=True)
    # Streaming gives the client's time to first token but costs the server work per token
    # (about 1% of decode speed on the H200); without it, which is the default, time to first
    # token is the server's own prompt time.
    stream: bool = Field(default=False, strict=True)
    spec_synth_len: float | None = Field(strict=True, default=None, ge=1.0, le=64.0)
    spec_synth_rates: list[float] | None = Field(default=None, min_length=1, max_length=64)
    protocol: Protocol = Field(default_factory=QuickProtocol)

    @field_validator("target_model", "draft_model")
    @classmethod
    def _model_reference(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not _MODEL_REF.match(value) or value.startswith("/") or ".." in value.split("/"):
            raise ValueError(
                "must be a .gguf file name or relative path (no leading /, no ..) of letters, digits, '.', '_', '-', '/'"
            )
        return value

    @field_validator("spec_types", mode="before")
    @classmethod
    def _split_spec_types(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("spec_types")
    @classmethod
    def _known_spec_types(cls, types: list[str]) -> list[str]:
        if types == ["none"]:
            return []
        for name in types:
            if name not in SPEC_TYPES + (PROMPT_LOOKUP,):
                raise ValueError(
                    f"unknown speculative type {name!r}; known: {', '.join(SPEC_TYPES)}"
                )
        if len(set(types)) != len(types):
            raise ValueError("a speculative type is listed twice")
        if sum(name in DRAFT_MODEL_TYPES + SELF_DRAFT_TYPES for name in types) > 1:
            raise ValueError(
                "at most one model-based type (draft-*) can be combined with n-gram types"
            )
        # Order does not change what the engine does; sorting makes one config one key.
        return sorted(types)

    @field_validator("tensor_split", mode="before")
    @classmethod
    def _split_tensor_split(cls, value: Any) -> Any:
        # The engine's own spelling: "3,1" (or "3/1").
        if isinstance(value, str):
            value = [part.strip() for part in re.split(r"[,/]", value) if part.strip()]
            try:
                value = [float(part) for part in value]
            except ValueError:
                raise ValueError("must be numbers separated by commas, e.g. 3,1") from None
        return value

    @field_validator("tensor_split")
    @classmethod
    def _proportions(cls, split: list[float] | None) -> list[float] | None:
        """Proportions as the smallest whole numbers in the same ratio, trailing zeros dropped:
        "3,1", "0.75,0.25" and "3,1,0" place the model alike in the engine, so they are one
        config with one key (3,1)."""
        if split is None:
            return None
        scaled = [round(part * 10**_SPLIT_DECIMALS) for part in split]
        if any(
            abs(whole - part * 10**_SPLIT_DECIMALS) > 1e-3
            for whole, part in zip(scaled, split, strict=True)
        ):
            raise ValueError(f"give each proportion with at most {_SPLIT_DECIMALS} decimals")
        while scaled and scaled[-1] == 0:
            scaled.pop()
        if not scaled:
            raise ValueError("at least one GPU needs a proportion above 0")
        common = math.gcd(*scaled)
        return [float(whole // common) for whole in scaled]

    @field_validator("spec_synth_rates")
    @classmethod
    def _rates_are_probabilities(cls, rates: list[float] | None) -> list[float] | None:
        if rates is not None and any(not 0.0 <= rate <= 1.0 for rate in rates):
            raise ValueError("every synthetic acceptance rate must lie between 0 and 1")
        return rates

    @model_validator(mode="after")
    def _consistent(self) -> BenchmarkConfig:
        # In this order, so that a config with several problems is refused for the same one.
        types = set(self.spec_types)
        model_types = types & set(DRAFT_MODEL_TYPES)
        if self.engine == "llama-cpp-python":
            self._check_in_process(types)
        elif PROMPT_LOOKUP in types:
            raise ValueError(
                "spec_types: prompt-lookup is llama-cpp-python's drafting; llama-server's "
                "n-gram types are ngram-simple, ngram-mod, ngram-map-k, ..."
            )
        self._check_draft_model(model_types)
        self._check_drafting_options(types)
        self._check_gpu_placement(model_types)
        if self.n_min is not None and self.n_max is not None and self.n_min > self.n_max:
            raise ValueError(f"n_min: {self.n_min} is larger than n_max {self.n_max}")
        self._check_synthetic(types, model_types)
        self._check_context()
        return self

    def _check_draft_model(self, model_types: set[str]) -> None:
        if model_types and self.draft_model is None:
            raise ValueError(f"draft_model: {sorted(model_types)[0]} needs a draft model")
        if self.draft_model is not None and not model_types:
            raise ValueError(
                "draft_model: a draft model is set but no draft-model type is chosen "
                f"(one of {', '.join(DRAFT_MODEL_TYPES)})"
            )

    def _check_drafting_options(self, types: set[str]) -> None:
        if "draft-dflash" in types and self.n_max is not None and self.n_max > DFLASH_MAX_N_MAX:
            raise ValueError(
                f"n_max: {self.n_max} is out of range for draft-dflash: it must lie between 1 and "
                f"{DFLASH_MAX_N_MAX} (the engine would silently clamp it)"
            )
        drafting_options = (
            self.n_max,
            self.n_min,
            self.p_min,
            self.draft_n_gpu_layers,
            self.draft_backend_sampling,
        )
        if not types and any(v is not None for v in drafting_options):
            raise ValueError(
                "spec_types: n_max, n_min, p_min and the draft's GPU options need a speculative type"
            )

    def _check_synthetic(self, types: set[str], model_types: set[str]) -> None:
        synthetic = self.spec_synth_len is not None or self.spec_synth_rates is not None
        if synthetic and not (model_types or types & set(SELF_DRAFT_TYPES)):
            raise ValueError(
                "spec_synth_len: synthetic acceptance needs a draft-model or draft-mtp type"
            )
        if self.spec_synth_len is not None and self.spec_synth_rates is not None:
            raise ValueError(
                "spec_synth_rates: choose spec_synth_len or spec_synth_rates, not both"
            )
        self._check_synthetic_lengths()

    def _check_synthetic_lengths(self) -> None:
        # The engine refuses these at load time; say so before anything starts.
        drafted = self.n_max if self.n_max is not None else ENGINE_DEFAULT_N_MAX
        if self.spec_synth_len is not None and self.spec_synth_len > drafted + 1:
            raise ValueError(
                f"spec_synth_len: {self.spec_synth_len} is above n_max + 1 = {drafted + 1}, "
                "the longest acceptance a step can have"
            )
        if self.spec_synth_rates is not None and len(self.spec_synth_rates) != drafted:
            raise ValueError(
                f"spec_synth_rates: give exactly n_max = {drafted} rates, one per draft position "
                f"(got {len(self.spec_synth_rates)})"
            )

    def _check_context(self) -> None:
        needed = self.required_total_context
        if self.ctx_size is not None and self.ctx_size < needed:
            raise ValueError(
                f"ctx_size: {self.ctx_size} is too small for the protocol, which needs {needed} tokens"
            )
        if needed > MAX_CONTEXT:
            raise ValueError(
                f"protocol: the protocol needs {needed} tokens of context, above {MAX_CONTEXT}"
            )

    def _check_gpu_placement(self, model_types: set[str]) -> None:
        # Each refusal is an option the engine would ignore: one behaviour, one config.
        if self.split_mode == "none" and self.tensor_split is not None:
            raise ValueError(
                "tensor_split: split_mode none keeps the whole model on the main GPU; "
                "proportions need split_mode layer or row"
            )
        if self.split_mode == "layer" and self.main_gpu != 0:
            raise ValueError(
                "main_gpu: a layer split places every layer by its proportions; main_gpu "
                "counts only with split_mode none or row"
            )
        if self.draft_gpu is not None and not model_types:
            raise ValueError(
                "draft_gpu: only a separate draft model (a draft-* type with draft_model) can "
                "be placed on a GPU of its own"
            )

    def _check_in_process(self, types: set[str]) -> None:
        if self.protocol.parallel:
            raise ValueError(
                f"protocol: the {self.protocol.name} protocol needs engine llama-server "
                "(llama-cpp-python answers one request at a time)"
            )
        if types - {PROMPT_LOOKUP}:
            raise ValueError(
                "spec_types: llama-cpp-python runs only the baseline and prompt-lookup drafting; "
                f"{', '.join(sorted(types - {PROMPT_LOOKUP}))} needs engine llama-server"
            )
        unsupported = {
            "spec_synth_len": self.spec_synth_len,
            "spec_synth_rates": self.spec_synth_rates,
            "draft_model": self.draft_model,
            "draft_n_gpu_layers": self.draft_n_gpu_layers,
            "draft_backend_sampling": self.draft_backend_sampling,
        }
        for field, value in unsupported.items():
            if value is not None:
                raise ValueError(f"{field}: not available with engine llama-cpp-python")
        if self.backend_sampling:
            raise ValueError("backend_sampling: not available with engine llama-cpp-python")
        if self.uses_gpu_placement:
            raise ValueError(
                "split_mode: split_mode, tensor_split, main_gpu and draft_gpu need engine "
                "llama-server"
            )

    @property
    def is_speculative(self) -> bool:
        return bool(self.spec_types)

    @property
    def is_synthetic(self) -> bool:
        return self.spec_synth_len is not None or self.spec_synth_rates is not None

    @property
    def learns_across_requests(self) -> bool:
        """Whether the config drafts from n-gram state that outlives a request in the engine."""
        return any(name in NGRAM_TYPES for name in self.spec_types)

    @property
    def uses_gpu_placement(self) -> bool:
        """Whether the config asks for any multi-GPU option beyond the engine's defaults."""
        return (
            self.split_mode != ENGINE_DEFAULT_SPLIT_MODE
            or self.tensor_split is not None
            or self.main_gpu != 0
            or self.draft_gpu is not None
        )

    @property
    def min_gpu_count(self) -> int:
        """The fewest GPUs the config's placement names: its proportions, main GPU and draft
        GPU must all exist (a layer or row split without proportions uses every GPU there is)."""
        named = [self.main_gpu + 1, len(self.tensor_split or ())]
        if self.draft_gpu is not None:
            named.append(self.draft_gpu + 1)
        return max(named)

    @property
    def effective_ctx_size(self) -> int:
        if self.ctx_size is not None:
            return self.ctx_size
        return self.protocol.engine_context()

    @property
    def slots(self) -> int:
        """The most requests the protocol has in flight at once (the engine's -np at most)."""
        return self.protocol.slots

    @property
    def required_total_context(self) -> int:
        """The engine's context the protocol needs: per slot, times the most slots it uses."""
        return self.protocol.required_context() * self.slots

    def context_for_slots(self, slots: int) -> int:
        """The engine's -c for a session of ``slots`` slots: llama-server splits -c across its
        slots, so each slot keeps the per-slot share of the context at the largest level."""
        return self.effective_ctx_size // self.slots * slots

    @property
    def spec_label(self) -> str:
        return ",".join(self.spec_types) if self.spec_types else "none"

    @property
    def effective_backend_sampling(self) -> bool:
        if self.backend_sampling is not None:
            return self.backend_sampling
        return self.engine == "llama-server"

    def canonical(self) -> dict[str, Any]:
        """The identity of this config as plain JSON data, defaults filled in."""
        data = self.model_dump(mode="json")
        data["ctx_size"] = self.effective_ctx_size
        data["backend_sampling"] = self.effective_backend_sampling
        # Left out when unset, so configs written before the option existed keep their keys.
        if data["draft_backend_sampling"] is None:
            del data["draft_backend_sampling"]
        # The multi-GPU options likewise, at the engine's defaults.
        for name, default in _PLACEMENT_DEFAULTS.items():
            if data[name] == default:
                del data[name]
        return data

    @classmethod
    def from_canonical(cls, data: dict[str, Any]) -> BenchmarkConfig:
        """The config a canonical dict (a result's, a stored config's) describes: the same key.

        canonical() writes the derived context, below MIN_CONTEXT for short protocols; a ctx_size
        equal to the one the protocol derives is read as unset, so such a config parses again.
        """
        if isinstance(data.get("ctx_size"), int):
            try:
                unset = cls.model_validate(data | {"ctx_size": None})
            except ValidationError:
                unset = None
            if unset is not None and unset.effective_ctx_size == data["ctx_size"]:
                return unset
        return cls.model_validate(data)

    def canonical_json(self) -> str:
        return json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))

    @property
    def key(self) -> str:
        """A stable 16-hex-digit identifier of the canonical config."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]

    def baseline(self) -> BenchmarkConfig:
        """The paired baseline: same target, context, protocol and engine flags, no speculation."""
        return self.model_copy(
            update={
                "draft_model": None,
                "spec_types": [],
                "n_max": None,
                "n_min": None,
                "p_min": None,
                "draft_n_gpu_layers": None,
                "draft_backend_sampling": None,
                "draft_gpu": None,
                "spec_synth_len": None,
                "spec_synth_rates": None,
                "ctx_size": self.effective_ctx_size,
            }
        )


# The multi-GPU options' defaults, which canonical() leaves out.
_PLACEMENT_DEFAULTS: dict[str, Any] = {
    "split_mode": ENGINE_DEFAULT_SPLIT_MODE,
    "tensor_split": None,
    "main_gpu": 0,
    "draft_gpu": None,
}


def parse_config(data: Any) -> BenchmarkConfig:
    """Validate raw JSON data (a config, or one's canonical dict) into a config, or raise
    ConfigError with one readable line."""
    try:
        if isinstance(data, dict):
            return BenchmarkConfig.from_canonical(data)
        return BenchmarkConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(format_validation_error(error)) from None


def parse_stored_config(canonical: dict[str, Any]) -> BenchmarkConfig:
    """The config a stored canonical dict (a Config row's, a result's, a job message's) describes,
    with its key: a categories protocol that names no suite is the first suite's, which its
    canonical form leaves out, where `parse_config` of a new config's JSON takes the current one.
    Raises ConfigError as `parse_config` does."""
    return parse_config(stored_canonical(canonical))


class FieldMessage(str):
    """A refusal's message that keeps what it says as data: pydantic's error type and its
    context (``"greater_than_equal"``, ``{"ge": 1}``), or a runner check's own, so that a form
    can word it from those rather than from its English text. Anywhere else it is the text."""

    kind: str
    context: dict[str, Any]

    def __new__(cls, text: str, kind: str = "", context: dict[str, Any] | None = None) -> Self:
        message = super().__new__(cls, text)
        message.kind = kind
        message.context = dict(context or {})
        return message


def field_errors(error: ValidationError) -> dict[str, list[str]]:
    """Pydantic errors as {dotted field: [messages]}, for forms and the API; each message a
    `FieldMessage` that keeps its error type and context."""
    errors: dict[str, list[str]] = {}
    for item in error.errors():
        location = ".".join(str(part) for part in item["loc"])
        text = item["msg"].removeprefix("Value error, ")
        message = FieldMessage(text, item["type"], item.get("ctx"))
        if not location:
            # Cross-field checks name the field they are about as "field: message".
            field, _, rest = text.partition(": ")
            if field in BenchmarkConfig.model_fields:
                location, message = field, FieldMessage(rest, item["type"], item.get("ctx"))
            else:
                location = "non_field_errors"
        errors.setdefault(location, []).append(message)
    return errors


def format_validation_error(error: ValidationError) -> str:
    parts = [f"{field}: {'; '.join(messages)}" for field, messages in field_errors(error).items()]
    return "invalid config: " + " | ".join(parts)
