"""The submit form's protocols: which it offers (`PROTOCOL_CHOICES`), the form fields each one
uses (`PROTOCOL_FORM_FIELDS`), the presets at the top of the form (`PRESETS`) with the form's
defaults, which are the runner's protocol defaults (its registry, `runner.protocols.PROTOCOLS`)
but for the quick protocol's `FORM_DEFAULTS`, fitted to a target's training context, and how a
protocol's form values become the runner's protocol data (`protocol_payload`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runner.protocols import PROTOCOLS, ContextSweepProtocol, ProtocolBase

PROTOCOL_CHOICES = [
    ("quick", "quick: one prompt, repeated runs (the seed's leaderboard)"),
    ("depth", "depth: input length varies, output fixed"),
    ("context-sweep", "context sweep: input = output, up to the model's training context (long)"),
    ("concurrency", "concurrency: parallel requests at several levels (aggregate tok/s)"),
    ("categories", "categories: the prompt suite by task category (acceptance per task)"),
]
# The protocol fields each protocol uses, named as the runner names them; a protocol's fields
# show only while it is chosen, and only they go into its config.
PROTOCOL_FORM_FIELDS: dict[str, tuple[str, ...]] = {
    "quick": ("prompt", "runs", "n_predict", "warmup"),
    "depth": ("depths", "output_tokens", "requests", "warmup"),
    "context-sweep": ("sweep_lengths",),
    "concurrency": ("levels", "input_tokens", "output_tokens", "rounds", "warmup"),
    "categories": ("categories", "output_tokens", "prompts_per_category", "warmup"),
}
# Every field some protocol uses.
PROTOCOL_FIELDS = frozenset(field for fields in PROTOCOL_FORM_FIELDS.values() for field in fields)


def protocols_of(field: str) -> list[str]:
    """The protocols a form field belongs to (none for a field of the config's own)."""
    return [name for name, fields in PROTOCOL_FORM_FIELDS.items() if field in fields]


# The quick protocol as the form offers it: a text to continue (the real model is a base model)
# and a length on which Gemma 3 270M base does not loop under greedy decoding, so a first job
# (the form's default: no drafting) gives a row that ranks. Measured with llama-server b11434 on
# CPU: the seed's Fibonacci prompt, the runner's own default, loops at 64 tokens already (a
# 20-token period over the whole output) and at 256; this prompt at 64 tokens gave three
# identical, loop-free outputs (distinct 4-grams 0.64). With n-gram drafting and its paired
# baseline it looped in that measurement too: the estimate warns once such a run is on the site
# (`selectors.known_loops`). The same prompt and length as the demo's real rows, so a first job
# joins their ranking; the CLI keeps the seed's protocol.
QUICK_FORM_PROMPT = (
    "The lighthouse keeper's log, written each evening at the top of the tower.\n\n"
    "12 March. Wind from the north-west, strong. Lamp lit at 18:40. Two fishing "
    "boats came in before dark; the ferry was late.\n\n13 March."
)
FORM_DEFAULTS: dict[str, dict[str, Any]] = {
    "quick": {"prompt": QUICK_FORM_PROMPT, "n_predict": 64, "runs": 3, "warmup": 1},
}
# A sweep length the form fits to a model's training context is a multiple of this.
LENGTH_STEP = 1024


def protocol_defaults(name: str) -> dict[str, Any]:
    """One protocol's form fields at the form's defaults (the runner's, but for the quick
    protocol's `FORM_DEFAULTS`); empty for a protocol the runner lacks."""
    cls = PROTOCOLS.get(name)
    if cls is None:
        return {}
    defaults = cls()  # type: ignore[call-arg]  # each protocol's `name` Literal has a default; the base's is bare
    values = {
        field: getattr(defaults, field)
        for field in PROTOCOL_FORM_FIELDS.get(name, ())
        if field in cls.model_fields
    }
    if name == "context-sweep":
        values["sweep_lengths"] = [point.input_tokens for point in ContextSweepProtocol().points]
    return values | FORM_DEFAULTS.get(name, {})


def form_values(protocol: ProtocolBase) -> dict[str, Any]:
    """A protocol's values as its form fields hold them: a context sweep's points as its
    lengths (`protocol_payload` turns them back)."""
    fields = PROTOCOL_FORM_FIELDS.get(protocol.name, ())
    values = {name: getattr(protocol, name) for name in fields if hasattr(protocol, name)}
    if isinstance(protocol, ContextSweepProtocol):
        values["sweep_lengths"] = [point.input_tokens for point in protocol.points]
    return values


def sweep_point(length: int) -> dict[str, int]:
    """A context-sweep point of input = output `length`, with the seed's request and warm-up
    counts for it (those of the seed's shortest point at least as long, else its longest)."""
    seed = ContextSweepProtocol().points
    like = next((p for p in seed if p.input_tokens >= length), seed[-1])
    return {
        "input_tokens": length,
        "output_tokens": length,
        "requests": like.requests,
        "warmup": like.warmup,
    }


def protocol_payload(name: str, values: dict[str, Any]) -> dict[str, Any]:
    """The runner's protocol data for a protocol's form values (empty ones left to the
    schema's defaults): the context sweep's lengths become its points."""
    payload: dict[str, Any] = {"name": name}
    for field in PROTOCOL_FORM_FIELDS.get(name, ()):
        value = values.get(field)
        if value in (None, "", []):
            continue
        if field == "sweep_lengths":
            # Text that is not a list of numbers goes to the schema as it is: its message shows.
            is_list = isinstance(value, list)
            payload["points"] = [sweep_point(n) for n in value] if is_list else value
        else:
            payload[field] = value
    return payload


def _fits(name: str, values: dict[str, Any], context_length: int) -> bool:
    try:
        protocol = PROTOCOLS[name].model_validate(protocol_payload(name, values))
    except ValueError:
        return True  # not the form's to judge: the schema says why on submit
    return protocol.required_context() <= context_length


def fitted_lengths(lengths: list[int], *, fits: Callable[[int], bool]) -> list[int]:
    """The lengths that fit; where some do not, the longest multiple of `LENGTH_STEP` that fits
    in their place (when it is longer than every length kept)."""
    kept = [length for length in lengths if fits(length)]
    if len(kept) == len(lengths):
        return list(lengths)
    shortest_dropped = min(length for length in lengths if not fits(length))
    top = next(
        (
            n
            for n in range(shortest_dropped // LENGTH_STEP * LENGTH_STEP, 0, -LENGTH_STEP)
            if fits(n)
        ),
        None,
    )
    if top is not None and top > max(kept, default=0):
        kept.append(top)
    return kept


# The field of each protocol whose lengths the target's training context bounds.
FITTED_FIELDS = {"context-sweep": "sweep_lengths", "depth": "depths"}
# Where a context the protocol decided (the form's context field left empty) is refused: at the
# lengths that decided it.
CONTEXT_FIELDS = {
    "quick": "n_predict",
    "depth": "depths",
    "context-sweep": "sweep_lengths",
    "concurrency": "input_tokens",
    "categories": "output_tokens",
}


def fitted_defaults(name: str, *, context_length: int | None) -> dict[str, Any]:
    """A protocol's form defaults fitted to a model's training context: the sweeps' lengths
    that fit, their longest replaced by the longest that fits (`fitted_lengths`)."""
    values = protocol_defaults(name)
    field = FITTED_FIELDS.get(name)
    if not context_length or field is None or not values.get(field):
        return values
    values[field] = fitted_lengths(
        values[field],
        fits=lambda n: _fits(name, values | {field: [n]}, context_length),
    )
    return values


@dataclass(frozen=True)
class Preset:
    """A choice at the top of the form: a protocol with the form's defaults."""

    name: str
    label: str
    protocol: str
    summary: str  # a format string over the protocol's defaults

    @property
    def available(self) -> bool:
        return self.protocol in PROTOCOLS and self.protocol in PROTOCOL_FORM_FIELDS

    def values(self, *, context_length: int | None = None) -> dict[str, Any]:
        return {"protocol": self.protocol} | fitted_defaults(
            self.protocol, context_length=context_length
        )

    def description(self) -> str:
        cls = PROTOCOLS.get(self.protocol)
        if cls is None:
            return "Not available yet: this site's runner does not know the protocol."
        defaults = cls()  # type: ignore[call-arg]  # each protocol's `name` Literal has a default; the base's is bare
        names = {name: getattr(defaults, name) for name in type(defaults).model_fields}
        names |= protocol_defaults(self.protocol)
        lists = {k: " / ".join(map(str, v)) for k, v in names.items() if isinstance(v, list)}
        return self.summary.format(**(names | lists))


PRESETS = (
    Preset(
        "quick", "Quick leaderboard", "quick",
        "A first row in minutes: a text to continue, {runs} runs of {n_predict} tokens after "
        "{warmup} warm-up, greedy; the real model, run without drafting, does not loop on it.",
    ),
    Preset(
        "context-sweep", "Context sweep", "context-sweep",
        "The seed's sweep: input = output at {sweep_lengths} tokens, as far as the model's "
        "training context holds; exact token-id prompts (long).",
    ),
    Preset(
        "depth", "Depth sweep", "depth",
        "The cheap sweep: input {depths} tokens, as far as the model's training context "
        "holds; {output_tokens} tokens out, {requests} requests a depth.",
    ),
    Preset(
        "concurrency", "Concurrency sweep", "concurrency",
        "Parallel clients at {levels}: {input_tokens} tokens in, {output_tokens} out, "
        "{rounds} rounds.",
    ),
)  # fmt: skip
