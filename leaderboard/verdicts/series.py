"""What a curve holds fixed, and the words that tell two configs apart.

A curve (the n_max sweep of /nmax/, a chart's bars) varies one parameter and holds every other
one fixed: the draft file, threads, engine options and flags. Its points are configs of one
ranking (`verdicts.workloads`) whose canonical JSON is the same but for that parameter
(`held_fixed`). Two configs that differ in anything carry different labels, in the engine's
words a user types ("-t 1", "-ctk q8_0"): `option_words` names every option a config sets away
from the engine's default, and the label (`services.configs`) and a series' name read it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, cast

from leaderboard.models import Config, ModelFile
from runner.config import (
    ENGINE_DEFAULT_SPLIT_MODE,
    BenchmarkConfig,
    parse_stored_config,
)
from runner.errors import ConfigError

# What a curve may vary (n_max, on /nmax/) and what its ranking already holds (the workload).
VARIED = ("n_max",)
RANKING_HOLDS = ("protocol", "source")


def held_fixed(config: Config, *, varied: tuple[str, ...] = VARIED) -> str:
    """A digest of everything a config sets but `varied` and the workload (which its ranking
    holds): configs of one ranking with the same digest belong on one curve. A config the
    runner cannot read (a seed CSV row's identity) is known by its type and files alone."""
    canonical = config.canonical if isinstance(config.canonical, dict) else {}
    if "target_model" in canonical:
        kept = {k: v for k, v in canonical.items() if k not in varied and k not in RANKING_HOLDS}
    else:
        kept = {"spec": config.spec_label, "files": [config.target_name, config.draft_id]}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _number(value: float) -> str:
    return f"{value:g}"


def _parsed(canonical: object) -> BenchmarkConfig | None:
    if not isinstance(canonical, dict) or "target_model" not in canonical:
        return None
    data = {k: v for k, v in canonical.items() if k != "source"}
    try:
        return parse_stored_config(data)
    except ConfigError:
        return None


def option_words(canonical: object) -> list[str]:
    """Every option a config sets away from the engine's defaults, as the flag a user would
    type ("-t 1", "-c 8192", "-ctk q8_0"), in a fixed order; [] for a config the runner cannot
    read (a seed CSV row's identity). n_max, the draft and the speculative type are the label's
    own words, not options."""
    config = _parsed(canonical)
    if config is None:
        return []
    words: list[str] = [config.engine] if config.engine != "llama-server" else []
    flags: list[tuple[str, Any]] = [
        ("-t", config.threads),
        ("-ngl", config.n_gpu_layers),
        ("-ngld", config.draft_n_gpu_layers),
        ("-c", config.ctx_size),
        ("--spec-draft-n-min", config.n_min),
        ("--spec-draft-p-min", config.p_min),
    ]
    words += [f"{flag} {_number(value)}" for flag, value in flags if value is not None]
    return words + _engine_words(config) + _device_words(config) + _synthetic_words(config)


def _on_off(value: bool) -> str:
    return "on" if value else "off"


def _engine_words(config: BenchmarkConfig) -> list[str]:
    """The attention, cache types and sampling a config sets away from the engine's defaults."""
    words = []
    if config.flash_attn != "auto":
        words.append(f"-fa {config.flash_attn}")
    if config.cache_type_k != "f16":
        words.append(f"-ctk {config.cache_type_k}")
    if config.cache_type_v != "f16":
        words.append(f"-ctv {config.cache_type_v}")
    if config.backend_sampling is not None and (
        config.backend_sampling != (config.engine == "llama-server")
    ):
        words.append("backend sampling " + _on_off(config.backend_sampling))
    if config.draft_backend_sampling is not None:
        words.append("draft backend sampling " + _on_off(config.draft_backend_sampling))
    return words


def _device_words(config: BenchmarkConfig) -> list[str]:
    """How a config splits its models over the GPUs, where it sets it."""
    words = []
    if config.split_mode != ENGINE_DEFAULT_SPLIT_MODE:
        words.append(f"-sm {config.split_mode}")
    if config.tensor_split is not None:
        words.append("-ts " + ",".join(_number(part) for part in config.tensor_split))
    if config.main_gpu:
        words.append(f"-mg {config.main_gpu}")
    if config.draft_gpu is not None:
        words.append(f"draft on GPU {config.draft_gpu}")
    return words


def _synthetic_words(config: BenchmarkConfig) -> list[str]:
    """Synthetic acceptance's settings and whether the requests were streamed."""
    words = []
    if config.spec_synth_len is not None:
        words.append(f"--spec-synth-len {_number(config.spec_synth_len)}")
    if config.spec_synth_rates is not None:
        words.append("--spec-synth-rates " + ",".join(map(_number, config.spec_synth_rates)))
    if config.stream:
        words.append("streamed")
    return words


def series_label(config: Config) -> str:
    """A curve's name: its speculative type, its draft file ("self-draft" where it drafts with
    the target's own file) and the options it holds fixed ("draft-simple · draft qwen3-0.6b-Q8_0
    · -t 1"); the config's draft is read, so select it with the config."""
    parts = [config.spec_label.replace(",", " + ")]
    if config.draft_id is not None:
        parts.append(
            "self-draft"
            if config.draft_id == config.target_id
            # A draft id names a draft: the field is None only without one.
            else f"draft {cast(ModelFile, config.draft).name}"
        )
    return " · ".join(parts + option_words(config.canonical))
