"""Forms: the submit form checks with the runner's schema, through the same service as the API."""

from __future__ import annotations

from typing import Any

from django import forms

from leaderboard import comparisons, selectors, services
from runner.config import KV_CACHE_TYPES, SPEC_TYPES

PROTOCOL_CHOICES = [
    ("quick", "quick: one prompt, repeated runs (the seed's leaderboard)"),
    ("depth", "depth: input length varies, output fixed"),
    ("context-sweep", "context sweep: input = output at 512/4K/12K/36K (long)"),
]
# Runner fields that the form shows under another name.
PROTOCOL_FIELDS = {"runs", "n_predict", "warmup", "depths", "output_tokens", "requests", "prompt"}


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
    n_max = forms.IntegerField(label="n_max (draft tokens per step)", required=False)
    n_min = forms.IntegerField(label="n_min", required=False)
    p_min = forms.FloatField(label="p_min", required=False)
    ctx_size = forms.IntegerField(label="Context size", required=False)
    n_gpu_layers = forms.IntegerField(label="GPU layers", required=False)
    flash_attn = forms.ChoiceField(choices=[(v, v) for v in ("auto", "on", "off")], initial="auto")
    cache_type_k = forms.ChoiceField(choices=[(v, v) for v in KV_CACHE_TYPES], initial="f16")
    cache_type_v = forms.ChoiceField(choices=[(v, v) for v in KV_CACHE_TYPES], initial="f16")
    spec_synth_len = forms.FloatField(
        label="Synthetic acceptance length",
        required=False,
        help_text="Benchmark-only: results are labelled synthetic and kept apart.",
    )
    protocol = forms.ChoiceField(choices=PROTOCOL_CHOICES, initial="quick")
    runs = forms.IntegerField(label="Runs (quick)", initial=10, required=False)
    n_predict = forms.IntegerField(label="Tokens per run (quick)", initial=1500, required=False)
    warmup = forms.IntegerField(label="Warm-up requests", initial=1, required=False)
    depths = forms.CharField(
        label="Depths (depth protocol)",
        required=False,
        initial="512,4096,12288,36864",
        help_text="Comma-separated input lengths in tokens.",
    )
    output_tokens = forms.IntegerField(label="Output tokens (depth)", initial=256, required=False)
    requests = forms.IntegerField(label="Requests per depth (depth)", initial=5, required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        hardware = selectors.servable_hardware()
        self.fields["hardware"].choices = [(h.slug, str(h)) for h in hardware]
        targets = selectors.registered_models(role="target")
        self.fields["target_model"].choices = [(m.path, m.name) for m in targets]
        drafts = selectors.registered_models()
        self.fields["draft_model"].choices = [("", "none")] + [
            (m.path, f"{m.name} ({m.architecture})") for m in drafts
        ]
        self.submission: services.ValidatedConfig | None = None

    def config_data(self) -> dict[str, Any]:
        """The runner config the cleaned fields describe; empty fields take the schema's defaults."""
        data = self.cleaned_data
        config = {
            name: data.get(name)
            for name in (
                "target_model", "draft_model", "spec_types", "n_max", "n_min", "p_min", "ctx_size",
                "n_gpu_layers", "flash_attn", "cache_type_k", "cache_type_v", "spec_synth_len",
            )
            if data.get(name) not in (None, "", [])
        }  # fmt: skip
        protocol = data.get("protocol") or "quick"
        fields = {
            "quick": ("runs", "n_predict", "warmup"),
            "depth": ("output_tokens", "requests", "warmup"),
        }
        config["protocol"] = {"name": protocol} | {
            name: data[name] for name in fields.get(protocol, ()) if data.get(name) is not None
        }
        if protocol == "depth" and data.get("depths"):
            config["protocol"]["depths"] = self._depths(data["depths"])
        return config

    def _depths(self, text: str) -> list[int] | str:
        try:
            return [int(part) for part in text.replace(" ", "").split(",") if part]
        except ValueError:
            return text  # the schema reports it as a field error

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            self.submission = services.validate_submission(
                data=self.config_data(), hardware_slug=cleaned.get("hardware")
            )
        except services.SubmissionError as error:
            for name, messages in error.errors.items():
                field = self._form_field(name)
                for message in messages:
                    self.add_error(field, message if field else f"{name}: {message}")
        return cleaned

    def _form_field(self, name: str) -> str | None:
        """The form field that shows a runner error: `protocol.quick.n_predict` shows at n_predict."""
        parts = name.split(".")
        if parts[0] == "protocol" and len(parts) >= 3 and parts[2] in PROTOCOL_FIELDS:
            return parts[2]
        return parts[0] if parts[0] in self.fields else None


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
        # The rules (how many, which exist) are leaderboard.comparisons', shared with the API.
        return comparisons.requested_keys(self.cleaned_data["keys"])


class BestConfigForm(forms.Form):
    """A target model and either a hardware kind or a memory size in GB."""

    target = forms.ChoiceField(label="Target model")
    hardware = forms.ChoiceField(label="My GPU", required=False)
    memory_gb = forms.FloatField(
        label="or memory (GB)",
        required=False,
        min_value=0.1,
        max_value=10_000,
        help_text="GPU memory available, in GB (10^9 bytes); used when no GPU is picked.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["target"].choices = [
            (t["name"], t["name"]) for t in selectors.target_summaries()
        ]
        self.fields["hardware"].choices = [("", "any (enter memory)")] + [
            (h.slug, f"{h.gpu_name} ({h.slug})")
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
        hardware = self.cleaned_data.get("hardware_row")
        if hardware is not None:
            return hardware.memory_bytes
        return int(self.cleaned_data["memory_gb"] * 1e9)
