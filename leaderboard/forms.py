"""Forms: the submit form checks with the runner's schema, through the same service as the API.

The submit form's layout is data: which fields a speculative type or a protocol uses
(`SPEC_TYPE_FIELDS`, `PROTOCOL_FORM_FIELDS`), the fieldsets they sit in (`FIELDSETS`) and the
presets at the top (`PRESETS`), whose numbers are the runner's protocol defaults. The page's
script shows only the fields that apply; without it every field shows, and the server validates
everything either way (the runner's schema is the one validator). `add_service_errors` shows a
service's field-keyed refusal on the form that asked, on every page and in the admin.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms

from leaderboard import selectors, services
from runner.config import (
    DFLASH_MAX_N_MAX,
    DRAFT_MODEL_TYPES,
    KV_CACHE_TYPES,
    MAX_GPUS,
    MAX_N_MAX,
    SELF_DRAFT_TYPES,
    SPEC_TYPES,
    BenchmarkConfig,
    ContextSweepProtocol,
    Protocol,
)
from runner.prompts import load_suite

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
# Fields that apply only with some speculative types: shown (and sent) while one is checked.
SPEC_TYPE_FIELDS: dict[str, tuple[str, ...]] = {
    "draft_model": DRAFT_MODEL_TYPES,
    "n_max": SPEC_TYPES,
    "n_min": SPEC_TYPES,
    "p_min": SPEC_TYPES,
    "spec_synth_len": DRAFT_MODEL_TYPES + SELF_DRAFT_TYPES,
    "draft_gpu": DRAFT_MODEL_TYPES,
}
# (id, legend, fields); a protocol field not listed goes to "protocol", any other to "engine".
FIELDSETS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("run", "What to run", ("hardware", "target_model", "spec_types")),
    ("draft", "Draft and speculation", ("draft_model", "n_max", "n_min", "p_min", "spec_synth_len")),
    ("protocol", "Protocol", ("protocol",)),
    ("engine", "Engine options", ("ctx_size", "n_gpu_layers", "threads", "flash_attn", "cache_type_k", "cache_type_v")),
    ("gpus", "Several GPUs", ("split_mode", "tensor_split", "main_gpu", "draft_gpu")),
)  # fmt: skip
CONFIG_FIELDS = (
    "target_model", "draft_model", "spec_types", "n_max", "n_min", "p_min", "ctx_size",
    "n_gpu_layers", "threads", "flash_attn", "cache_type_k", "cache_type_v", "spec_synth_len",
    "split_mode", "tensor_split", "main_gpu", "draft_gpu",
)  # fmt: skip
SPLIT_MODE_CHOICES = [
    ("layer", "layer: each GPU holds whole layers (the engine's default)"),
    ("none", "none: the whole model on the main GPU"),
    ("row", "row: weight rows split over the GPUs, K/V on the main GPU"),
]


def protocol_classes() -> dict[str, type]:
    """The runner's protocol classes by name: the members of its `Protocol` union."""
    union = typing.get_args(Protocol)[0]
    return {cls.model_fields["name"].default: cls for cls in typing.get_args(union)}


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
    cls = protocol_classes().get(name)
    if cls is None:
        return {}
    defaults = cls()
    values = {
        field: getattr(defaults, field)
        for field in PROTOCOL_FORM_FIELDS.get(name, ())
        if field in cls.model_fields
    }
    if name == "context-sweep":
        values["sweep_lengths"] = [point.input_tokens for point in defaults.points]
    return values | FORM_DEFAULTS.get(name, {})


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
        protocol = protocol_classes()[name].model_validate(protocol_payload(name, values))
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
        return self.protocol in protocol_classes() and self.protocol in PROTOCOL_FORM_FIELDS

    def values(self, *, context_length: int | None = None) -> dict[str, Any]:
        return {"protocol": self.protocol} | fitted_defaults(
            self.protocol, context_length=context_length
        )

    def description(self) -> str:
        cls = protocol_classes().get(self.protocol)
        if cls is None:
            return "Not available yet: this site's runner does not know the protocol."
        defaults = cls()
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


class IntegerListField(forms.CharField):
    """Comma-separated integers as a list; text that is not one goes to the schema as it is, so
    the runner's own message is the error."""

    def to_python(self, value: Any) -> list[int] | str | None:
        text = super().to_python(value).replace(" ", "")
        if not text:
            return None
        try:
            return [int(part) for part in text.split(",") if part]
        except ValueError:
            return text

    def prepare_value(self, value: Any) -> Any:
        return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else value


class ProportionListField(forms.CharField):
    """A tensor split as the engine spells it ("3,1"); the schema parses and checks it."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return ",".join(f"{part:g}" for part in value)
        return value


def _config_default(name: str) -> Any:
    return BenchmarkConfig.model_fields[name].default


def _thousands(match: re.Match[str]) -> str:
    number = match.group(0)
    return f"{int(number):,}" if number.lstrip("-").isdigit() else number


# Pydantic's and the runner's wordings, and what a person reads at the field instead.
WORDINGS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), words)
    for pattern, words in (
        (r"^Input should be greater than or equal to (?P<n>\S+)$", "at least {n}"),
        (r"^Input should be less than or equal to (?P<n>\S+)$", "at most {n}"),
        (r"^Input should be greater than (?P<n>\S+)$", "more than {n}"),
        (r"^Input should be less than (?P<n>\S+)$", "less than {n}"),
        (r"^Input should be a valid integer.*$", "a whole number"),
        (r"^Input should be a valid number.*$", "a number"),
        (r"^Input should be a valid (list|array).*$", "a list of whole numbers, comma-separated"),
        (r"^String should have at most (?P<n>\d+) characters?$", "at most {n} characters"),
        (r"^String should have at least 1 character$", "required"),
        (r"^List should have at least (?P<n>\d+) items?.*$", "give at least {n}"),
        (r"^List should have at most (?P<n>\d+) items?.*$", "at most {n} values"),
        (r"^Field required$", "required"),
    )
)
TRAINING_CONTEXT = re.compile(
    r"^context (?P<needed>\d+)(?P<per_slot> per slot)? is above the target's training context "
    r"of (?P<limit>\d+) tokens$"
)


def worded(message: str, *, field: str | None = None) -> str:
    """A refusal in a person's words, for the field it shows at: "at least 1", not pydantic's
    "Input should be greater than or equal to 1"; a context above the target's training context
    as "at most 32,768 for this model", at the context field or at the lengths that need it."""
    if found := TRAINING_CONTEXT.match(message):
        limit = f"{int(found['limit']):,}"
        if field == "ctx_size":
            return f"at most {limit} for this model (its training context)"
        per_slot = " per request" if found["per_slot"] else ""
        return (
            f"these settings need {int(found['needed']):,} tokens of context{per_slot}: "
            f"at most {limit} for this model (its training context)"
        )
    for pattern, words in WORDINGS:
        if found := pattern.match(message):
            values = {k: re.sub(r"-?\d+", _thousands, v) for k, v in found.groupdict().items()}
            return words.format(**values)
    return message


def add_service_errors(
    form: forms.BaseForm,
    error: services.ServiceError,
    *,
    field_for: Callable[[str], str | None] | None = None,
) -> None:
    """Show a service's refusal on the form it came from, in words (`worded`): each message at
    the form field its key names (`field_for` maps a key to a field; by default a key that is
    one of the form's fields), any other above the form, led by its key unless that is
    "non_field_errors"."""
    for name, messages in error.errors.items():
        field = field_for(name) if field_for else (name if name in form.fields else None)
        for message in messages:
            text = worded(message, field=field)
            named = field or name == "non_field_errors"
            form.add_error(field, text if named else f"{name}: {text}")


def threads_help(reason: str) -> str:
    """The threads field's help: what -t is, and why the form starts from its value."""
    return f"llama-server's -t; empty: the engine's default (all cores). Starts at: {reason}."


class SubmitForm(forms.Form):
    hardware = forms.ChoiceField()
    target_model = forms.ChoiceField(label="Target model")
    draft_model = forms.ChoiceField(label="Draft model", required=False)
    spec_types = forms.MultipleChoiceField(
        label="Speculative types",
        choices=[(t, t) for t in SPEC_TYPES],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None checked means a plain baseline run.",
    )
    n_max = forms.IntegerField(
        label="n_max (draft tokens per step)",
        required=False,
        widget=forms.NumberInput(attrs={"min": 1, "max": MAX_N_MAX}),
        help_text=(
            f"1 to {MAX_N_MAX}; at most {DFLASH_MAX_N_MAX} for draft-dflash "
            "(its block size minus one)."
        ),
    )
    n_min = forms.IntegerField(label="n_min", required=False)
    p_min = forms.FloatField(label="p_min", required=False)
    ctx_size = forms.IntegerField(
        label="Context size", required=False, help_text="Empty: what the protocol needs."
    )
    n_gpu_layers = forms.IntegerField(label="GPU layers", required=False)
    threads = forms.IntegerField(
        label="CPU threads",
        required=False,
        help_text="llama-server's -t; empty: the engine's default (all cores).",
        widget=forms.NumberInput(attrs={"min": 1}),
    )
    flash_attn = forms.ChoiceField(
        choices=[(v, v) for v in ("auto", "on", "off")],
        initial=_config_default("flash_attn"),
        required=False,
    )
    cache_type_k = forms.ChoiceField(
        choices=[(v, v) for v in KV_CACHE_TYPES],
        initial=_config_default("cache_type_k"),
        required=False,
    )
    cache_type_v = forms.ChoiceField(
        choices=[(v, v) for v in KV_CACHE_TYPES],
        initial=_config_default("cache_type_v"),
        required=False,
    )
    split_mode = forms.ChoiceField(
        label="Split mode",
        choices=SPLIT_MODE_CHOICES,
        initial=_config_default("split_mode"),
        required=False,
        help_text="How llama-server spreads the target over the GPUs (--split-mode).",
    )
    tensor_split = ProportionListField(
        label="Tensor split",
        required=False,
        max_length=200,
        help_text="Each GPU's proportion, e.g. 3,1 (--tensor-split); empty: by each GPU's memory.",
    )
    main_gpu = forms.IntegerField(
        label="Main GPU",
        required=False,
        min_value=0,
        help_text="The GPU of a none split, or of a row split's K/V (--main-gpu); 0 is the first.",
    )
    draft_gpu = forms.IntegerField(
        label="Draft's GPU",
        required=False,
        min_value=0,
        help_text="Put the draft model wholly on this GPU (--spec-draft-device); empty: it "
        "follows the target's split.",
    )
    spec_synth_len = forms.FloatField(
        label="Synthetic acceptance length",
        required=False,
        help_text="Benchmark-only: results are labelled synthetic and kept apart.",
    )
    protocol = forms.ChoiceField(choices=PROTOCOL_CHOICES, required=False)
    prompt = forms.CharField(
        label="Prompt",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Text the model continues, the same for every run; a base model continues "
        "text, it does not answer questions.",
    )
    runs = forms.IntegerField(label="Runs", required=False)
    n_predict = forms.IntegerField(label="Tokens per run", required=False)
    warmup = forms.IntegerField(label="Warm-up requests", required=False)
    depths = IntegerListField(
        label="Depths", required=False, help_text="Comma-separated input lengths in tokens."
    )
    sweep_lengths = IntegerListField(
        label="Lengths",
        required=False,
        help_text="Comma-separated input = output lengths in tokens, measured as the seed's sweep "
        "does: 30 requests up to 512, 10 up to 4,096, 5 up to 12,288, 3 beyond.",
    )
    output_tokens = forms.IntegerField(label="Output tokens", required=False)
    requests = forms.IntegerField(label="Requests per depth", required=False)
    # The concurrency and categories protocols' own fields (runner.config).
    levels = IntegerListField(
        label="Concurrency levels",
        required=False,
        help_text="Comma-separated numbers of requests in flight at once, increasing.",
    )
    input_tokens = forms.IntegerField(label="Input tokens per request", required=False)
    rounds = forms.IntegerField(label="Rounds per level", required=False)
    categories = forms.MultipleChoiceField(
        label="Task categories",
        choices=[(name, name) for name in load_suite().names],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None checked: every category of the prompt suite.",
    )
    prompts_per_category = forms.IntegerField(label="Prompts per category", required=False)

    def __init__(self, *args: Any, preset: str = "quick", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        hardware = selectors.servable_hardware()
        self.fields["hardware"].choices = [(h.slug, str(h)) for h in hardware]
        # Threads start at what is fastest on each host (the page's script follows the chosen
        # one); the form says why.
        self.threads_advice = {h.slug: selectors.threads_advice(hardware=h) for h in hardware}
        chosen_hardware = self.initial.get("hardware") or next(iter(self.threads_advice), None)
        advice = self.threads_advice.get(chosen_hardware) or selectors.threads_advice(hardware=None)
        if "threads" not in self.initial:
            self.fields["threads"].initial = advice.threads
            self.fields["threads"].help_text = threads_help(advice.reason)
        targets = selectors.registered_models(role="target")
        self.fields["target_model"].choices = [(m.path, m.name) for m in targets]
        # Each target's training context, which the sweeps' lengths are fitted to.
        self.training_contexts = {m.path: m.model_info().context_length for m in targets}
        drafts = selectors.registered_models()
        self.fields["draft_model"].choices = [("", "none")] + [
            (m.path, f"{m.name} ({m.architecture})") for m in drafts
        ]
        # Every protocol field starts at the runner's default: the preset's protocol first.
        chosen = next((p for p in PRESETS if p.name == preset and p.available), PRESETS[0])
        target = self.initial.get("target_model") or next(iter(self.training_contexts), None)
        context_length = self.training_contexts.get(target)
        for name in reversed([chosen.protocol, *PROTOCOL_FORM_FIELDS]):
            for field, value in fitted_defaults(name, context_length=context_length).items():
                self.fields[field].initial = value
        self.fields["protocol"].initial = chosen.protocol
        self.preset = chosen.name
        self.submission: services.ValidatedConfig | None = None

    def clean_prompt(self) -> str:
        # Browsers send a textarea's line breaks as CRLF: the prompt the user sees is the one
        # with "\n", and a different byte would be a different workload.
        return self.cleaned_data.get("prompt", "").replace("\r\n", "\n")

    def layout(self) -> list[dict[str, Any]]:
        """The fieldsets in order, each field once, with the types and protocols it applies to."""
        protocol_fields = {f for fields in PROTOCOL_FORM_FIELDS.values() for f in fields}
        groups = {key: [] for key, _, _ in FIELDSETS}
        placed = {name for _, _, names in FIELDSETS for name in names}
        for key, _, names in FIELDSETS:
            groups[key].extend(name for name in names if name in self.fields)
        for name in self.fields:
            if name not in placed:
                groups["protocol" if name in protocol_fields else "engine"].append(name)
        return [
            {
                "id": key,
                "legend": legend,
                "fields": [
                    {
                        "field": self[name],
                        "spec_types": " ".join(SPEC_TYPE_FIELDS.get(name, ())),
                        "protocols": " ".join(
                            p for p, fields in PROTOCOL_FORM_FIELDS.items() if name in fields
                        ),
                    }
                    for name in groups[key]
                ],
            }
            for key, legend, _ in FIELDSETS
        ]

    def initial_data(self) -> dict[str, Any]:
        """What the browser would send for the unchanged form (for the first estimate)."""
        data: dict[str, Any] = {}
        for name, field in self.fields.items():
            value = self.get_initial_for_field(field, name)
            if value in (None, "", []) and isinstance(field, forms.ChoiceField):
                choices = [c for c, _ in field.choices if c != ""]
                value = choices[0] if choices and field.required else value
            if value not in (None, "", []):
                data[name] = field.prepare_value(value)
        return data

    def config_data(self) -> dict[str, Any]:
        """The runner config the cleaned fields describe; empty fields take the schema's defaults."""
        data = self.cleaned_data
        config = {
            name: data.get(name) for name in CONFIG_FIELDS if data.get(name) not in (None, "", [])
        }
        config["protocol"] = protocol_payload(data.get("protocol") or "quick", data)
        return config

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            self.submission = services.validate_submission(
                data=self.config_data(), hardware_slug=cleaned.get("hardware")
            )
        except services.SubmissionError as error:
            add_service_errors(self, error, field_for=self._form_field)
        return cleaned

    def _form_field(self, name: str) -> str | None:
        """The form field that shows a runner error: `protocol.quick.n_predict` shows at n_predict,
        a context sweep's points at its lengths, and a context the user left empty at the
        protocol's lengths that decided it (`CONTEXT_FIELDS`)."""
        parts = name.split(".")
        protocol_fields = {f for fields in PROTOCOL_FORM_FIELDS.values() for f in fields}
        if parts[0] == "protocol" and len(parts) >= 3:
            field = "sweep_lengths" if parts[2] == "points" else parts[2]
            return field if field in protocol_fields else "protocol"
        if name == "ctx_size" and self.cleaned_data.get("ctx_size") is None:
            protocol = self.cleaned_data.get("protocol") or "quick"
            return CONTEXT_FIELDS.get(protocol, "protocol")
        return parts[0] if parts[0] in self.fields else None


def initial_from_config(config: BenchmarkConfig) -> tuple[dict[str, Any], list[str]]:
    """The form's initial values for a config, and the config's settings the form cannot carry
    (submitting the form gives a config that differs in those)."""
    initial: dict[str, Any] = {
        name: getattr(config, name)
        for name in CONFIG_FIELDS
        if getattr(config, name) not in (None, [])
    }
    protocol = config.protocol
    initial["protocol"] = protocol.name
    fields = PROTOCOL_FORM_FIELDS.get(protocol.name, ())
    initial |= {name: getattr(protocol, name) for name in fields if hasattr(protocol, name)}
    if "sweep_lengths" in fields:
        initial["sweep_lengths"] = [point.input_tokens for point in protocol.points]
    carried = {name: initial[name] for name in CONFIG_FIELDS if name in initial}
    carried["protocol"] = protocol_payload(protocol.name, initial)
    try:
        rebuilt = BenchmarkConfig.model_validate(carried).canonical()
    except ValueError:
        rebuilt = {}
    wanted = config.canonical()
    lost = [name for name in wanted if rebuilt.get(name) != wanted[name]]
    return initial, lost


class CsvImportForm(forms.Form):
    file = forms.FileField(
        help_text=(
            "leaderboard_runs.csv from the seed's benchmark kit; listed as self-reported, "
            "protocol 'seed kit CSV (unverified)'."
        )
    )
    hardware = forms.CharField(max_length=200, help_text="The GPU the results were measured on.")
    baseline_run_name = forms.CharField(
        max_length=200,
        required=False,
        help_text="Default: the one run name without a draft marker.",
    )
    target_name = forms.CharField(
        max_length=200,
        required=False,
        help_text=(
            "Default: the target the file's model column names, else the baseline's name. "
            "A file whose model column names several targets pairs each with its own baseline."
        ),
    )


class CompareForm(forms.Form):
    """Two to four config keys, comma-separated, as in /compare/?keys=a,b,c."""

    keys = forms.CharField(
        label="Config keys",
        max_length=200,
        help_text="Two to four config keys, separated by commas (the first is the reference).",
    )

    def clean_keys(self) -> list[str]:
        # The rules (how many, which exist) are selectors.compare', shared with the API.
        return selectors.requested_keys(self.cleaned_data["keys"])


class BestConfigForm(forms.Form):
    """A target model and either a hardware kind (one GPU or several) or a memory size in GB
    per GPU and how many such GPUs."""

    target = forms.ChoiceField(label="Target model")
    hardware = forms.ChoiceField(label="My GPU", required=False)
    memory_gb = forms.FloatField(
        label="or memory (GB)",
        required=False,
        min_value=0.1,
        max_value=10_000,
        help_text="Each GPU's memory, in GB (10^9 bytes); used when no GPU is picked.",
    )
    gpu_count = forms.IntegerField(
        label="GPUs",
        required=False,
        min_value=1,
        max_value=MAX_GPUS,
        initial=1,
        help_text="How many such GPUs: rows measured on more GPUs than this are left out.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["target"].choices = [
            (t["name"], t["name"]) for t in selectors.target_summaries()
        ]
        self.fields["hardware"].choices = [("", "any (enter memory)")] + [
            (h.slug, f"{h.label} ({h.slug})")
            for h in selectors.hardware_summaries()
            if h.memory_bytes
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        slug = cleaned.get("hardware")
        cleaned["hardware_row"] = selectors.hardware_by_slug(slug=slug) if slug else None
        if not slug and cleaned.get("memory_gb") is None and "memory_gb" not in self.errors:
            self.add_error("memory_gb", "Pick a GPU or enter its memory in GB.")
        return cleaned

    def memory_bytes(self) -> int:
        """Each GPU's memory: the chosen kind's (its smallest GPU's), else the one entered."""
        hardware = self.cleaned_data.get("hardware_row")
        if hardware is not None:
            return hardware.memory_bytes
        return int(self.cleaned_data["memory_gb"] * 1e9)

    def gpus(self) -> int:
        """How many GPUs: the chosen kind's, else the number entered (one by default)."""
        hardware = self.cleaned_data.get("hardware_row")
        if hardware is not None:
            return hardware.gpu_count
        return self.cleaned_data.get("gpu_count") or 1


class ModelRequestForm(forms.Form):
    """A request for a model on the Hugging Face Hub (services.hub_models.request_model)."""

    hf_repo = forms.CharField(
        max_length=200, label="Repository", help_text="e.g. unsloth/Qwen3-8B-GGUF"
    )
    hf_file = forms.CharField(
        max_length=255, label="File", help_text="the .gguf file's path in the repository"
    )
    revision = forms.CharField(
        max_length=255, required=False, help_text="a branch, tag or commit; empty: main"
    )
