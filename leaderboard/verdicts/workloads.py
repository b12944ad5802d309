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
from runner.protocols import text_tokens

# How much of a quick protocol's prompt a label shows.
PROMPT_PREVIEW = 40
# The prompts a quick-protocol batch actually sent (`prompt_set`): the protocol's text, or the
# runner's distinct token-id prompts (its plan for n-gram configs and their paired baselines).
TEXT_PROMPT = "text"
TOKEN_ID_PROMPTS = "token-ids"
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


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def workload_label(config: Config, *, prompt_set: str = "") -> str:
    """The workload in words, enough to tell two rows of one protocol apart: 'quick, 64 out,
    prompt “Write a …”', 'quick, 64 out, distinct token-id prompts of 28 tokens' (`prompt_set`),
    'depth 512–36864 tokens (4 depths), 128 out', 'concurrency 1–16 (5 levels), 512 in, 256
    out', 'categories code, math, … (7), 2 prompts each'."""
    protocol = canonical_protocol(config)
    name = config.protocol
    if name == SEED_CSV_PROTOCOL:
        return SEED_CSV_PROTOCOL_LABEL
    parts: list[str] = []
    depths = _depths(protocol)
    levels = [level for level in protocol.get("levels") or [] if _whole(level)]
    if name == "concurrency" and levels:
        parts.append(f"concurrency {min(levels)}–{max(levels)} ({len(levels)} levels)")
    elif name == OUTPUT_LENGTH and (lengths := _output_lengths(protocol)):
        shown = f"{lengths[0]}" if len(lengths) == 1 else f"{min(lengths)}–{max(lengths)}"
        parts.append(f"output length {shown} tokens ({len(lengths)} lengths)")
    elif name == "quality":
        # The tasks, their seed and greedy decoding decide what its accuracy means.
        tasks, seed = _whole(protocol.get("tasks")), _whole(protocol.get("task_seed"))
        parts.append(f"quality {tasks} tasks, seed {seed}, {protocol.get('sampling', 'greedy')}")
    elif name == "categories":
        names = [c for c in protocol.get("categories") or [] if isinstance(c, str)]
        shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
        parts.append(f"categories {shown} ({len(names)})" if names else "categories")
    elif len(depths) == 1:
        parts.append(f"{name} {depths[0]} tokens")
    elif depths:
        parts.append(f"{name} {min(depths)}–{max(depths)} tokens ({len(depths)} depths)")
    else:
        parts.append(name)
    # Which prompts: a versioned suite's text (the concurrency protocol's suite prompts, a
    # categories suite after the first) or, by default, exact token ids.
    suite = protocol.get("suite") if isinstance(protocol.get("suite"), str) else None
    suite_prompts = name == "concurrency" and protocol.get("prompts") == "suite"
    if suite_prompts and (bound := _whole(protocol.get("input_tokens"))) is not None:
        parts.append(f"suite {suite} prompts of at most {bound} tokens")
    elif name == "categories" and suite:
        parts.append(f"suite {suite}")
    for key, word in (
        ("input_tokens", "in"),
        ("output_tokens", "out"),
        ("n_predict", "out"),
        ("max_tokens", "out"),
    ):
        if (value := _whole(protocol.get(key))) is not None and not (
            key == "input_tokens" and (depths or suite_prompts)
        ):
            parts.append(f"{value} {word}")
    if (per := _whole(protocol.get("prompts_per_category"))) is not None:
        parts.append(f"{per} prompts each")
    prompt = protocol.get("prompt")
    if prompt_set == TOKEN_ID_PROMPTS and isinstance(prompt, str) and prompt:
        # The runner sent token ids of about the text's length, never the text itself.
        parts.append(f"distinct token-id prompts of {text_tokens(prompt)} tokens")
    elif isinstance(prompt, str) and prompt:
        cut = " ".join(prompt[:PROMPT_PREVIEW].split())
        parts.append(f"prompt “{cut}{'…' if len(prompt) > PROMPT_PREVIEW else ''}”")
    return ", ".join(parts)


def prompt_suite(config: Config) -> str | None:
    """The prompt suite's version a config's prompts come from: a categories config's suite
    ("1" where its canonical JSON names none: written before suites had versions), a
    concurrency config's with suite prompts; None for prompts of no suite."""
    protocol = canonical_protocol(config)
    suite = protocol.get("suite")
    if config.protocol == "categories":
        return suite if isinstance(suite, str) else "1"
    if config.protocol == "concurrency" and protocol.get("prompts") == "suite":
        return suite if isinstance(suite, str) else None
    return None


def _depths(protocol: dict) -> list[int]:
    if protocol.get("name") == "depth":
        values = protocol.get("depths") or []
    elif protocol.get("name") == "context-sweep":
        values = [
            point.get("input_tokens")
            for point in protocol.get("points") or []
            if isinstance(point, dict)
        ]
    else:
        return []
    return [value for value in values if _whole(value) is not None]


def _output_lengths(protocol: dict) -> list[int]:
    if protocol.get("name") != OUTPUT_LENGTH:
        return []
    return [value for value in protocol.get("output_lengths") or [] if _whole(value) is not None]


def output_lengths(config: Config) -> list[int]:
    """The output lengths an output-length config measures, from its canonical JSON ([] for
    other protocols)."""
    return _output_lengths(canonical_protocol(config))


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
    """The prompts a quick-protocol batch actually sent, "" under other protocols (whose
    parameters say which prompts they send): derived from its measured requests' prompt hashes
    (all the protocol's text: TEXT_PROMPT, else TOKEN_ID_PROMPTS), else from their exact
    lengths (a token-id prompt records one), else from the plan of the invocation that measured
    it (`planned_token_ids`: an n-gram config's, whose paired baseline runs the same plan)."""
    if protocol != "quick":
        return ""
    records = [
        record
        for record in (requests if isinstance(requests, list) else [])
        if isinstance(record, dict) and record.get("phase", "measure") == "measure"
    ]
    hashes = {record.get("prompt_sha256") for record in records} - {None, ""}
    if hashes:
        text = hashlib.sha256(json.dumps(prompt).encode()).hexdigest()
        return TEXT_PROMPT if hashes == {text} else TOKEN_ID_PROMPTS
    if any(_whole(record.get("input_tokens")) is not None for record in records):
        return TOKEN_ID_PROMPTS
    return TOKEN_ID_PROMPTS if planned_token_ids else TEXT_PROMPT


DEPTH_PROTOCOLS = ("depth", "context-sweep")
# Output length varies at a fixed input (runner.protocols.schema.OutputLengthProtocol).
OUTPUT_LENGTH = "output-length"


def depths(config: Config) -> list[int]:
    """The input lengths a config's protocol measures, from its canonical JSON ([] if none)."""
    return _depths(canonical_protocol(config))


def is_across_depths(config: Config) -> bool:
    """Whether a config's one tok/s figure pools requests of several input lengths."""
    return config.protocol in DEPTH_PROTOCOLS and len(depths(config)) > 1


def is_across_lengths(config: Config) -> bool:
    """Whether a config's one tok/s figure pools requests of several output lengths: an
    output-length run ranks as a depth sweep does, its figure pooled over the lengths and its
    speedup their geometric mean, without a one-batch interval (docs/VERDICTS.md)."""
    return config.protocol == OUTPUT_LENGTH and len(output_lengths(config)) > 1


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
