"""Forms: the submit form checks with the runner's schema, through the same service as the API.

The submit form's layout is data: which fields a speculative type uses (`SPEC_TYPE_FIELDS`) and
the fieldsets they sit in (`FIELDSETS`); which fields a protocol uses and the presets at the top
are `leaderboard.presets`'. The page's script shows only the fields that apply; without it every
field shows, and the server validates everything either way (the runner's schema is the one
validator). `add_service_errors` shows a service's field-keyed refusal on the form that asked,
in a person's words (`worded`), on every page and in the admin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django import forms

from leaderboard import selectors, services
from leaderboard.models import Hardware
from leaderboard.presets import (
    CONTEXT_FIELDS,
    PRESETS,
    PROTOCOL_CHOICES,
    PROTOCOL_FIELDS,
    PROTOCOL_FORM_FIELDS,
    fitted_defaults,
    form_values,
    protocol_payload,
    protocols_of,
)
from runner.compatibility import TRAINING_CONTEXT
from runner.config import (
    DFLASH_MAX_N_MAX,
    DRAFT_MODEL_TYPES,
    KV_CACHE_TYPES,
    MAX_GPUS,
    MAX_N_MAX,
    SELF_DRAFT_TYPES,
    SPEC_TYPES,
    BenchmarkConfig,
)
from runner.prompts import load_suite

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


class IntegerListField(forms.CharField):
    """Comma-separated integers as a list; text that is not one goes to the schema as it is, so
    the runner's own message is the error."""

    # A CharField that cleans into a list: its return widens CharField's by design.
    def to_python(self, value: Any) -> list[int] | str | None:  # type: ignore[override]
        # CharField gives its empty_value ("") for no text.
        text = (super().to_python(value) or "").replace(" ", "")
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


def _number(value: object) -> str:
    """A limit as a person reads it, as pydantic writes it but grouped: 131,072, 1, 0.5."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


# What a person reads at the field instead of pydantic's words, by pydantic's error type: a
# format string over the error's context (its limits), and where the words fit only some errors
# of the type, the context they fit ({"min_length": 1}: only a string that must not be empty).
WORDINGS: dict[str, tuple[str, dict[str, object]]] = {
    "greater_than_equal": ("at least {ge}", {}),
    "less_than_equal": ("at most {le}", {}),
    "greater_than": ("more than {gt}", {}),
    "less_than": ("less than {lt}", {}),
    "int_type": ("a whole number", {}),
    "int_parsing": ("a whole number", {}),
    "int_from_float": ("a whole number", {}),
    "float_type": ("a number", {}),
    "float_parsing": ("a number", {}),
    "list_type": ("a list of whole numbers, comma-separated", {}),
    "string_too_long": ("at most {max_length} characters", {}),
    "string_too_short": ("required", {"min_length": 1}),
    "too_short": ("give at least {min_length}", {"field_type": "List"}),
    "too_long": ("at most {max_length} values", {"field_type": "List"}),
    "missing": ("required", {}),
}


def _training_context(context: dict[str, Any], field: str | None) -> str:
    limit = f"at most {_number(context['limit'])} for this model (its training context)"
    if field == "ctx_size":
        return limit
    per_slot = " per request" if context["per_slot"] else ""
    return f"these settings need {_number(context['needed'])} tokens of context{per_slot}: {limit}"


def worded(message: str, *, field: str | None = None) -> str:
    """A refusal in a person's words, for the field it shows at, from what the message says as
    data (`runner.config.FieldMessage`: its error type and context): "at least 1", not
    pydantic's "Input should be greater than or equal to 1"; a context above the target's
    training context as "at most 32,768 for this model", at the context field or at the lengths
    that need it. A message without a known type is shown as it is."""
    kind, context = getattr(message, "kind", ""), getattr(message, "context", {})
    if kind == TRAINING_CONTEXT:
        return _training_context(context, field)
    words, fits = WORDINGS.get(kind, (None, {}))
    if words is None or any(context.get(name) != value for name, value in fits.items()):
        return str(message)
    return words.format(**{name: _number(value) for name, value in context.items()})


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


def _choice_field(form: forms.BaseForm, name: str) -> forms.ChoiceField:
    """A form's choice field (`form.fields` types each as the base `Field`)."""
    return cast(forms.ChoiceField, form.fields[name])


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

    def __init__(
        self, *args: Any, offer: selectors.SubmitOffer, preset: str = "quick", **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._offer(offer)
        self._start_at_preset(preset)
        self.submission: services.ValidatedConfig | None = None

    def _offer(self, offer: selectors.SubmitOffer) -> None:
        _choice_field(self, "hardware").choices = list(offer.hardware)
        _choice_field(self, "target_model").choices = list(offer.targets)
        _choice_field(self, "draft_model").choices = [("", "none"), *offer.drafts]
        self.training_contexts = offer.training_contexts
        # Threads start at what is fastest on each host (the page's script follows the chosen
        # one); the form says why.
        self.threads_advice = offer.threads_advice
        chosen_hardware = self.initial.get("hardware") or next(iter(self.threads_advice), None)
        known = self.threads_advice.get(chosen_hardware) if chosen_hardware else None
        advice = known or offer.default_advice
        if "threads" not in self.initial:
            self.fields["threads"].initial = advice.threads
            self.fields["threads"].help_text = threads_help(advice.reason)

    def _start_at_preset(self, preset: str) -> None:
        # Every protocol field starts at the runner's default: the preset's protocol first.
        chosen = next((p for p in PRESETS if p.name == preset and p.available), PRESETS[0])
        target = self.initial.get("target_model") or next(iter(self.training_contexts), None)
        context_length = self.training_contexts.get(target) if target else None
        for name in reversed([chosen.protocol, *PROTOCOL_FORM_FIELDS]):
            for field, value in fitted_defaults(name, context_length=context_length).items():
                self.fields[field].initial = value
        self.fields["protocol"].initial = chosen.protocol
        self.preset = chosen.name

    def clean_prompt(self) -> str:
        # Browsers send a textarea's line breaks as CRLF: the prompt the user sees is the one
        # with "\n", and a different byte would be a different workload.
        return self.cleaned_data.get("prompt", "").replace("\r\n", "\n")

    def layout(self) -> list[dict[str, Any]]:
        """The fieldsets in order, each field once, with the types and protocols it applies to."""
        groups = self._fieldset_names()
        return [
            {
                "id": key,
                "legend": legend,
                "fields": [
                    {
                        "field": self[name],
                        "spec_types": " ".join(SPEC_TYPE_FIELDS.get(name, ())),
                        "protocols": " ".join(protocols_of(name)),
                    }
                    for name in groups[key]
                ],
            }
            for key, legend, _ in FIELDSETS
        ]

    def _fieldset_names(self) -> dict[str, list[str]]:
        """Each fieldset's fields: those it lists, then any other protocol field in "protocol"
        and any other field in "engine"."""
        groups = {
            key: [name for name in names if name in self.fields] for key, _, names in FIELDSETS
        }
        placed = {name for _, _, names in FIELDSETS for name in names}
        for name in self.fields:
            if name not in placed:
                groups["protocol" if name in PROTOCOL_FIELDS else "engine"].append(name)
        return groups

    def initial_data(self) -> dict[str, Any]:
        """What the browser would send for the unchanged form (for the first estimate)."""
        data: dict[str, Any] = {}
        for name, field in self.fields.items():
            value = self.get_initial_for_field(field, name)
            if value in (None, "", []) and isinstance(field, forms.ChoiceField):
                # The setter keeps choices as a list (or a lazy iterator); the stubs type the
                # getter as whatever the setter takes, callables included.
                choices = [c for c, _ in field.choices if c != ""]  # type: ignore[misc,union-attr]
                value = choices[0] if choices and field.required else value
            if value not in (None, "", []):
                data[name] = field.prepare_value(value)
        return data

    def config_data(self) -> dict[str, Any]:
        """The runner config the cleaned fields describe; empty fields take the schema's
        defaults."""
        data = self.cleaned_data
        config = {
            name: data.get(name) for name in CONFIG_FIELDS if data.get(name) not in (None, "", [])
        }
        config["protocol"] = protocol_payload(data.get("protocol") or "quick", data)
        return config

    def clean(self) -> dict[str, Any]:
        # Form.clean returns cleaned_data (the stubs allow an override's None).
        cleaned = cast(dict[str, Any], super().clean())
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
        if parts[0] == "protocol" and len(parts) >= 3:
            field = "sweep_lengths" if parts[2] == "points" else parts[2]
            return field if field in PROTOCOL_FIELDS else "protocol"
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
    initial |= form_values(protocol)
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
        # The rules (how many, which exist) are selectors.answers.compare', shared with the API.
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

    def __init__(
        self, *args: Any, targets: list[str], hardware: list[Hardware], **kwargs: Any
    ) -> None:
        """`targets`: the target models' names; `hardware`: the kinds to offer (those with a
        known memory size are)."""
        super().__init__(*args, **kwargs)
        self.hardware_kinds = {h.slug: h for h in hardware if h.memory_bytes}
        _choice_field(self, "target").choices = [(name, name) for name in targets]
        _choice_field(self, "hardware").choices = [("", "any (enter memory)")] + [
            (h.slug, f"{h.label} ({h.slug})") for h in self.hardware_kinds.values()
        ]

    def clean(self) -> dict[str, Any]:
        # Form.clean returns cleaned_data (the stubs allow an override's None).
        cleaned = cast(dict[str, Any], super().clean())
        slug = cleaned.get("hardware")
        cleaned["hardware_row"] = self.hardware_kinds.get(slug) if slug else None
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
