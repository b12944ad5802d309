"""What a row measured and what it may be compared with.

Two rows are comparable only when they measured the same workload (the protocol with all its
parameters and its prompt set: `Config.workload`, how many runs or rounds left out), in the same
tok/s definition, on the same hardware kind and engine release. That set of rows is a *ranking*:
`ranking_key` names it, `ranking_label` says it in words, and no rank, tie, chart or piece of
advice ever crosses two of them. A baseline shares its speculative configs' workload (the same
protocol) and so their ranking key, where it is the denominator of their speedups, never a rank.
"""

from __future__ import annotations

import hashlib
import json

from leaderboard.models import Config
from runner.config import NGRAM_TYPES
from runner.protocols import ProtocolBase, protocol_class
from runner.protocols.quick import TEXT_PROMPT, TOKEN_ID_PROMPTS

__all__ = ["TEXT_PROMPT", "TOKEN_ID_PROMPTS"]  # the quick protocol's prompt sets, as stored

# The seed kit's CSV imports: a protocol of their own (leaderboard.services.configs says why).
SEED_CSV_PROTOCOL = "seed-csv"
SEED_CSV_PROTOCOL_LABEL = "seed kit CSV (unverified)"
DEFINITION_WORDS = {
    "decode": "decode tok/s",
    "end-to-end": "end-to-end tok/s",
    "aggregate": "aggregate tok/s at the lowest level",
}


def canonical_protocol(config: Config) -> dict:
    """The protocol in a config's canonical JSON, {} where it has none (imports) or it is not an
    object: every reader of its parameters goes through here."""
    canonical = config.canonical if isinstance(config.canonical, dict) else {}
    protocol = canonical.get("protocol")
    return protocol if isinstance(protocol, dict) else {}


def _protocol(config: Config) -> type[ProtocolBase] | None:
    return protocol_class(config.protocol)


def workload_label(config: Config, *, prompt_set: str = "") -> str:
    """The workload in words, enough to tell two rows of one protocol apart, as the protocol says
    it (`label` of its class, from the stored canonical JSON): 'quick, 64 out, prompt “Write a
    …”', 'depth 512–36864 tokens (4 depths), 128 out', 'concurrency 1–16 (5 levels), 512 in, 256
    out'; a protocol the runner does not know reads as its name."""
    if config.protocol == SEED_CSV_PROTOCOL:
        return SEED_CSV_PROTOCOL_LABEL
    protocol = _protocol(config)
    if protocol is None:
        return config.protocol
    return protocol.workload_label(canonical_protocol(config), prompt_set=prompt_set)


def prompt_suite(config: Config) -> str | None:
    """The prompt suite's version a config's prompts come from: a categories config's suite
    ("1" where its canonical JSON names none: written before suites had versions), a
    concurrency config's with suite prompts; None for prompts of no suite."""
    protocol = _protocol(config)
    return protocol.prompt_suite(canonical_protocol(config)) if protocol else None


def output_lengths(config: Config) -> list[int]:
    """The output lengths an output-length config measures, from its canonical JSON ([] for
    other protocols)."""
    protocol = _protocol(config)
    return protocol.stored_output_lengths(canonical_protocol(config)) if protocol else []


def ranking_key(
    config: Config,
    *,
    definition: str,
    hardware_id: int,
    engine_release: str,
    prompt_set: str = "",
) -> str:
    """The ranking a row belongs to: a digest of its workload (with the prompts its batches
    sent, `prompt_set`), tok/s definition, hardware kind and engine release (rows with the same
    key, and only those, are compared). A text prompt's rankings keep the keys they had."""
    parts: list[object] = [config.workload, definition, hardware_id, engine_release]
    if prompt_set and prompt_set != TEXT_PROMPT:
        parts.append(prompt_set)
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def ranking_label(
    config: Config, *, definition: str, gpu_name: str, engine_release: str, prompt_set: str = ""
) -> str:
    """The ranking in words, as a table's heading: 'quick, 64 out, prompt “…” · decode tok/s ·
    CPU (x86_64) · b11434'."""
    words = DEFINITION_WORDS.get(definition, definition)
    workload = workload_label(config, prompt_set=prompt_set)
    return " · ".join([workload, words, gpu_name, engine_release])


def prompt_set(protocol: str, prompt: object, requests: object, *, planned_token_ids: bool) -> str:
    """The prompts a batch actually sent where its protocol's parameters do not say (the quick
    protocol's: `QuickProtocol.prompt_set`), "" under other protocols: from its measured
    requests, else from the plan of the invocation that measured it (`planned_token_ids`: an
    n-gram config's, whose paired baseline runs the same plan)."""
    found = protocol_class(protocol)
    if found is None:
        return ""
    records = [
        record
        for record in (requests if isinstance(requests, list) else [])
        if isinstance(record, dict) and record.get("phase", "measure") == "measure"
    ]
    return found.prompt_set(prompt, records, planned_token_ids=planned_token_ids)


DEPTH_PROTOCOLS = ("depth", "context-sweep")
# Output length varies at a fixed input (runner.protocols.output_length).
OUTPUT_LENGTH = "output-length"


def depths(config: Config) -> list[int]:
    """The input lengths a config's protocol measures, from its canonical JSON ([] if none)."""
    protocol = _protocol(config)
    return protocol.stored_depths(canonical_protocol(config)) if protocol else []


def is_across_depths(config: Config) -> bool:
    """Whether a config's one tok/s figure pools requests of several input lengths."""
    return len(depths(config)) > 1


def is_across_lengths(config: Config) -> bool:
    """Whether a config's one tok/s figure pools requests of several output lengths: an
    output-length run ranks as a depth sweep does, its figure pooled over the lengths and its
    speedup their geometric mean, without a one-batch interval (docs/VERDICTS.md)."""
    return len(output_lengths(config)) > 1


def learns_across_requests(spec_label: str) -> bool:
    """Whether a config's drafting keeps n-gram state that outlives a request in the engine (the
    seed kit's CSV names it plain "ngram")."""
    return any(name in NGRAM_TYPES or name == "ngram" for name in spec_label.split(","))


def prompts_unknown(requests: object) -> bool:
    """Whether a result's measured requests do not all say which prompt they sent (no prompt
    hash): such a batch cannot be counted as measured on distinct prompts."""
    records = requests if isinstance(requests, list) else []
    measured = [
        record
        for record in records
        if isinstance(record, dict) and record.get("phase", "measure") == "measure"
    ]
    return not measured or any(
        not (isinstance(value := record.get("prompt_sha256"), str) and value) for record in measured
    )


def repeats_a_prompt(requests: object) -> bool:
    """Whether two measured requests of a result shared a prompt (by their prompt hashes)."""
    records = requests if isinstance(requests, list) else []
    hashes = [
        record.get("prompt_sha256")
        for record in records
        if isinstance(record, dict) and record.get("phase", "measure") == "measure"
    ]
    known = [value for value in hashes if isinstance(value, str) and value]
    return len(set(known)) < len(known)
