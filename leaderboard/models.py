"""Specboard's data: registered models, hardware, configs, jobs, runs and leaderboard rows.

Models hold data only; every write goes through `leaderboard.services`.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from runner.gguf.inspect import ModelInfo
from runner.provenance import describe_gpus

# What self-reported rows carry instead of a measured engine release, and where uploads come from
# (a config's canonical "source"); the writes set them and the reads recognise them.
SELF_REPORTED_RELEASE = "unreported"
SELF_REPORTED_UPLOAD_SOURCE = "self-reported-upload"


class ModelFile(models.Model):
    """A GGUF file registered by an admin; submissions may only pick these."""

    class Role(models.TextChoices):
        TARGET = "target", "target"
        DRAFT = "draft", "draft"

    name = models.CharField(max_length=200, unique=True)
    path = models.CharField(
        max_length=255, unique=True, help_text="Relative to SPECBOARD_MODELS_DIR."
    )
    sha256 = models.CharField(max_length=64)
    size_bytes = models.BigIntegerField()
    architecture = models.CharField(max_length=64)
    metadata = models.JSONField(default=dict, help_text="The runner's ModelInfo for this file.")
    role = models.CharField(max_length=16, choices=Role.choices)
    # Random or demo weights (the tiny fixtures, or what an admin marks): their rows never rank.
    # Changed through `services.board.mark_test_weights`, which moves the rows too.
    test_weights = models.BooleanField(default=False, db_default=False)
    registered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)
    # A file registered by Hugging Face reference (services.hub_models): its repository, its
    # path in the repository and the commit the revision resolved to. Empty for local files.
    # GPU hosts fetch it on first use into their model cache (runner.model_cache).
    hf_repo = models.CharField(max_length=200, blank=True, default="", db_default="")
    hf_file = models.CharField(max_length=255, blank=True, default="", db_default="")
    hf_revision = models.CharField(max_length=40, blank=True, default="", db_default="")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def from_hub(self) -> bool:
        return bool(self.hf_repo)

    def model_info(self) -> ModelInfo:
        """The runner's ModelInfo of this file, from the metadata read at registration."""
        known = ModelInfo.__dataclass_fields__
        return ModelInfo(**{k: v for k, v in self.metadata.items() if k in known})


class ModelRequest(models.Model):
    """A signed-in user's request for a model on the Hugging Face Hub; an admin decides."""

    class State(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REFUSED = "refused"

    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="model_requests"
    )
    hf_repo = models.CharField(max_length=200)
    hf_file = models.CharField(max_length=255)
    revision = models.CharField(max_length=255, blank=True, help_text="Empty: the main branch.")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    note = models.CharField(max_length=500, blank=True, help_text="The admin's word to the user.")
    model = models.ForeignKey(
        ModelFile, null=True, blank=True, on_delete=models.SET_NULL, related_name="requests"
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="decided_model_requests",
    )
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.hf_repo}/{self.hf_file}"


class Hardware(models.Model):
    """One kind of machine: its GPUs (how many, of which model and memory), served by one
    worker queue. A two-GPU kind is a kind of its own ("2x RTX 3090 24GB"), with its own queue
    and rows: a host serves it only with exactly those GPUs visible (services.hosts)."""

    slug = models.SlugField(max_length=100, unique=True)
    # The GPU model ("RTX 3090"; a mixed set's names joined by " + ") and one GPU's memory (the
    # smallest of a mixed set); `gpus` has each GPU's own.
    gpu_name = models.CharField(max_length=200)
    memory_bytes = models.BigIntegerField(null=True, blank=True)
    gpu_count = models.PositiveSmallIntegerField(default=1, db_default=1)
    # Each GPU in the engine's order, as NVML names it on the host: [{"name", "memory_bytes"}];
    # empty for kinds registered before, which are gpu_count GPUs of gpu_name and memory_bytes.
    gpus = models.JSONField(default=list, blank=True)
    driver = models.CharField(max_length=64, blank=True)
    cuda = models.CharField(max_length=32, blank=True)
    host = models.CharField(max_length=200, blank=True)
    # A CPU kind's CPU model as the runner's provenance reads it (runner.provenance.cpu_name):
    # recorded when the kind is registered from its machine, else fixed by the first result
    # recorded under it that names no GPU; the door refuses a CPU-only result of another model.
    cpu_model = models.CharField(max_length=200, blank=True)
    queue_name = models.CharField(
        max_length=120, blank=True, help_text="Empty when no worker serves it (self-reported)."
    )
    self_reported = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["gpu_name"]
        verbose_name_plural = "hardware"

    def __str__(self) -> str:
        return self.label

    def gpu_list(self) -> list[dict]:
        """Each GPU's name and memory, in the engine's order."""
        if self.gpus:
            return [
                {"name": gpu.get("name", self.gpu_name), "memory_bytes": gpu.get("memory_bytes")}
                for gpu in self.gpus
                if isinstance(gpu, dict)
            ]
        return [{"name": self.gpu_name, "memory_bytes": self.memory_bytes}] * self.gpu_count

    def gpu_memory(self) -> list[int] | None:
        """Each GPU's memory in bytes, in the engine's order; None where one is unknown."""
        memory = [gpu["memory_bytes"] for gpu in self.gpu_list()]
        return memory if memory and all(isinstance(m, int) and m > 0 for m in memory) else None

    @property
    def label(self) -> str:
        """The kind in words: "RTX 4090" for one GPU (as always), "2x RTX 3090 24GB" for more."""
        if self.gpu_count == 1 and len(self.gpu_list()) == 1:
            return self.gpu_name
        return describe_gpus(self.gpu_list())


class EngineBuild(models.Model):
    """A llama.cpp release seen in results; an admin retires the results of a bad build."""

    release = models.CharField(max_length=64, unique=True)
    retired = models.BooleanField(default=False)
    note = models.CharField(max_length=300, blank=True)
    first_seen = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-first_seen"]

    def __str__(self) -> str:
        return self.release


class Config(models.Model):
    """One distinct benchmark config: the runner's canonical JSON and its key."""

    key = models.CharField(max_length=16, unique=True)
    canonical = models.JSONField()
    label = models.CharField(max_length=200)
    target = models.ForeignKey(
        ModelFile, null=True, blank=True, on_delete=models.PROTECT, related_name="target_configs"
    )
    draft = models.ForeignKey(
        ModelFile, null=True, blank=True, on_delete=models.PROTECT, related_name="draft_configs"
    )
    target_name = models.CharField(max_length=200, db_index=True)
    spec_label = models.CharField(max_length=200, default="none", db_index=True)
    protocol = models.CharField(max_length=32, db_index=True)
    # What the protocol's figure means besides its name (services.configs.protocol_variant): the
    # concurrency and categories protocols rank only among configs alike in it.
    protocol_variant = models.CharField(
        max_length=16, blank=True, default="", db_default="", db_index=True
    )
    n_max = models.PositiveIntegerField(null=True, blank=True)
    ctx_size = models.PositiveIntegerField(null=True, blank=True)
    synthetic = models.BooleanField(default=False)
    self_reported = models.BooleanField(default=False)
    baseline = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="speculative_configs"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["label"]

    def __str__(self) -> str:
        return self.label

    @property
    def is_speculative(self) -> bool:
        return self.spec_label != "none"

    @property
    def workload(self) -> str:
        """What it measured, as one key: "<protocol>:<protocol_variant>" (configs alike in it
        measured the same thing, however many runs or rounds each took)."""
        return f"{self.protocol}:{self.protocol_variant}"


class ConfigSpecType(models.Model):
    """One speculative type of a config, so that filtering by type is an exact match."""

    config = models.ForeignKey(Config, on_delete=models.CASCADE, related_name="spec_types")
    name = models.CharField(max_length=64, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["config", "name"], name="one_row_per_config_spec_type")
        ]

    def __str__(self) -> str:
        return self.name


class GpuHost(models.Model):
    """A GPU host that serves one hardware kind, with the key it signs its messages with."""

    name = models.SlugField(max_length=100, unique=True)
    hardware = models.ForeignKey(Hardware, on_delete=models.PROTECT, related_name="hosts")
    # The HMAC key both sides hold (the host in SPECBOARD_HOST_KEY); shown once at registration.
    key = models.CharField(max_length=64, editable=False)
    revoked = models.BooleanField(default=False)
    # The GPUs the host advertised (runner.provenance.visible_gpus: index, name, memory), at
    # registration or in its latest signed claim of a job; empty when it never said.
    gpus = models.JSONField(default=list, blank=True)
    # The llama.cpp release an admin registered it for: besides the job's own release, the only
    # one its results may carry (a result's claim alone never names a release).
    engine_release = models.CharField(max_length=64, blank=True, default="", db_default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hardware.slug})"


class Job(models.Model):
    """One request to measure a config on one hardware kind; status changes by guarded UPDATE."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="jobs"
    )
    config = models.ForeignKey(Config, on_delete=models.PROTECT, related_name="jobs")
    hardware = models.ForeignKey(Hardware, on_delete=models.PROTECT, related_name="jobs")
    # The release the site asked for (SPECBOARD_ENGINE_RELEASE when it was submitted): with the
    # hosts' registered releases, the releases the site knows (selectors.board staleness).
    engine_release = models.CharField(max_length=64, db_index=True)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    progress = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    log_tail = models.TextField(blank=True)
    task_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    baseline_for = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="baseline_jobs"
    )
    auto_scheduled = models.BooleanField(default=False)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The GPU host that claimed the job (its signed "started" event), and when it last spoke.
    host = models.ForeignKey(
        GpuHost, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    host_seen_at = models.DateTimeField(null=True, blank=True)
    # The nonce in the job message last sent (every send and re-send has a fresh one), and the
    # highest sequence number accepted for it: a host's message counts only for that delivery
    # and only once (services.hosts).
    delivery = models.CharField(max_length=32, blank=True, default="", db_default="")
    delivery_sequence = models.BigIntegerField(default=0, db_default=0)
    # What the job's protocol will cost in tokens, warm-ups included (the runner's
    # `job_token_budget` of its config), fixed when it is submitted: a user's tokens today are
    # one sum over their jobs, not every config of theirs parsed again (leaderboard.allowances).
    total_tokens = models.BigIntegerField(default=0, db_default=0)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # A user's allowance: their jobs in the rate's period and today, one index-only
            # pass (the sum and the filter carried in the index).
            models.Index(
                fields=["owner", "created_at"],
                include=["auto_scheduled", "total_tokens"],
                name="job_owner_recent",
            ),
            # A queued job's place in its hardware's queue: only the queued jobs are indexed.
            models.Index(
                fields=["hardware", "created_at", "id"],
                condition=models.Q(status="queued"),
                name="job_queued_order",
            ),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE


class Run(models.Model):
    """One batch of measured requests of a config: a job's result, or one imported CSV row."""

    class Definition(models.TextChoices):
        DECODE = "decode", "decode (server timings)"
        END_TO_END = "end-to-end", "end-to-end (client wall time)"
        # Concurrency rows only (leaderboard.verdicts.best_run): a wave's generated tokens over
        # its wall time at the config's lowest level, its rounds the samples.
        AGGREGATE = "aggregate", "aggregate (a wave's tokens over its wall time, lowest level)"

    job = models.OneToOneField(
        Job, null=True, blank=True, on_delete=models.CASCADE, related_name="run"
    )
    config = models.ForeignKey(Config, on_delete=models.PROTECT, related_name="runs")
    hardware = models.ForeignKey(Hardware, on_delete=models.PROTECT, related_name="runs")
    engine_release = models.CharField(max_length=64, db_index=True)
    engine_backend = models.CharField(max_length=32, blank=True)
    # `services.board.build_flags_key` of the engine's build flags; empty when none are known.
    # A baseline pairs with a run only if both the backend and this key are the same.
    build_flags_key = models.CharField(max_length=16, blank=True, default="", db_default="")
    # Under the quick protocol, the prompts the batch actually sent (`verdicts.prompt_set`:
    # "text" or "token-ids"), derived from its records when its row is refreshed; empty until
    # then and under the other protocols. A row, and so a ranking, holds batches of one only.
    prompt_set = models.CharField(max_length=16, blank=True, default="", db_default="")
    tps_definition = models.CharField(max_length=16, choices=Definition.choices)
    n = models.PositiveIntegerField(default=0)
    decode_mean = models.FloatField(null=True, blank=True)
    decode_median = models.FloatField(null=True, blank=True)
    decode_stdev = models.FloatField(null=True, blank=True)
    decode_min = models.FloatField(null=True, blank=True)
    decode_max = models.FloatField(null=True, blank=True)
    decode_ci95_low = models.FloatField(null=True, blank=True)
    decode_ci95_high = models.FloatField(null=True, blank=True)
    e2e_mean = models.FloatField(null=True, blank=True)
    e2e_median = models.FloatField(null=True, blank=True)
    e2e_stdev = models.FloatField(null=True, blank=True)
    e2e_min = models.FloatField(null=True, blank=True)
    e2e_max = models.FloatField(null=True, blank=True)
    e2e_ci95_low = models.FloatField(null=True, blank=True)
    e2e_ci95_high = models.FloatField(null=True, blank=True)
    # The columns one request leaves without a meaning: null from one-request batches, but rows
    # stored before that rule carry stdev 0.0 and a zero-width interval (read them as null).
    SPREAD_FIELDS = tuple(
        f"{kind}_{name}"
        for kind in ("decode", "e2e")
        for name in ("stdev", "ci95_low", "ci95_high")
    )
    ttft_ms_mean = models.FloatField(null=True, blank=True)
    acceptance_rate = models.FloatField(null=True, blank=True)
    tau = models.FloatField(null=True, blank=True)
    draft_tokens = models.BigIntegerField(default=0)
    draft_accepted = models.BigIntegerField(default=0)
    verify_steps = models.BigIntegerField(default=0)
    speedup = models.FloatField(
        null=True, blank=True, help_text="Measured within the run, if paired."
    )
    lossless = models.BooleanField(null=True, blank=True)
    # runner.fidelity's verdict against the baseline measured in the same invocation ("identical",
    # "near ties only", "mismatch", "unclassified"); empty when no such baseline ran.
    fidelity = models.CharField(max_length=16, blank=True, default="", db_default="")
    synthetic = models.BooleanField(default=False)
    degenerate = models.BooleanField(default=False)
    self_reported = models.BooleanField(default=False)
    peak_memory_bytes = models.BigIntegerField(null=True, blank=True)
    memory_kind = models.CharField(max_length=16, blank=True)
    gpu_seconds = models.FloatField(default=0.0)
    run_name = models.CharField(max_length=200, blank=True)
    import_fingerprint = models.CharField(max_length=64, null=True, blank=True, unique=True)
    provenance = models.JSONField(default=dict, blank=True)
    # The result file as the runner wrote it, less its requests: those are stored once, as the
    # run's request records (read the whole through `leaderboard.stored_results`).
    raw_result = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.config}"

    @property
    def tokens_per_second(self) -> float | None:
        """The batch's average tok/s in its own definition (decode, or end-to-end for imports)."""
        return self.decode_mean if self.tps_definition == self.Definition.DECODE else self.e2e_mean

    @property
    def ci95(self) -> tuple[float | None, float | None]:
        """The batch's 95% interval in its own definition; none below two requests (rows stored
        before that rule carry a zero-width one)."""
        if self.n < 2:
            return None, None
        if self.tps_definition == self.Definition.DECODE:
            return self.decode_ci95_low, self.decode_ci95_high
        return self.e2e_ci95_low, self.e2e_ci95_high

    @property
    def command(self) -> str:
        return self.provenance.get("command", "")


# The columns of a request record that a runner result fills and the raw downloads export.
REQUEST_RECORD_FIELDS = (
    "index", "phase", "point", "input_tokens", "prompt_n", "prompt_ms", "predicted_n",
    "predicted_ms", "decode_tokens_per_second", "end_to_end_tokens_per_second", "ttft_ms",
    "wall_ms", "draft_n", "draft_n_accepted", "verify_steps", "tau", "accepted_per_position",
    "output_sha256", "first_divergence",
)  # fmt: skip


class RequestRecord(models.Model):
    """One measured request of a run, as the runner reported it."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="requests")
    index = models.PositiveIntegerField()
    phase = models.CharField(max_length=16, default="measure")
    point = models.PositiveIntegerField(null=True, blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    prompt_n = models.PositiveIntegerField(default=0)
    prompt_ms = models.FloatField(null=True, blank=True)
    predicted_n = models.PositiveIntegerField(default=0)
    predicted_ms = models.FloatField(null=True, blank=True)
    decode_tokens_per_second = models.FloatField(null=True, blank=True)
    end_to_end_tokens_per_second = models.FloatField(null=True, blank=True)
    ttft_ms = models.FloatField(null=True, blank=True)
    wall_ms = models.FloatField(null=True, blank=True)
    draft_n = models.PositiveIntegerField(default=0)
    draft_n_accepted = models.PositiveIntegerField(default=0)
    verify_steps = models.PositiveIntegerField(default=0)
    tau = models.FloatField(null=True, blank=True)
    accepted_per_position = models.JSONField(default=list, blank=True)
    output_sha256 = models.CharField(max_length=64, blank=True)
    first_divergence = models.IntegerField(null=True, blank=True)
    # The rest of the runner's record, which no page queries (its prompt hash, streamed chunk
    # times, energy, round, category, quality score, judged divergences): with the columns above
    # it is the whole record, stored here once (`leaderboard.stored_results`).
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="one_record_per_request_index")
        ]

    def __str__(self) -> str:
        return f"request {self.index} of run {self.run_id}"


class LeaderboardEntry(models.Model):
    """A config's standing on one hardware and engine release: its best average over runs, with
    what discloses that rule (how many batches it is the best of, the pooled figures of all).

    Maintained by `services.refresh_leaderboard_entry` when a run is recorded, never on page view.
    """

    config = models.ForeignKey(Config, on_delete=models.CASCADE, related_name="entries")
    # The config's target, kept on the row (as the config keeps it) so that a target's rows are
    # an index range, not a join filtered over every row (the model page, the draft advice, the
    # glance: docs/PERFORMANCE.md, issue 27).
    target_name = models.CharField(max_length=200, default="", db_default="")
    # Its speculative type and draft length too, so that a ranking's rows are read without their
    # configs when a run is recorded (`services.board.rerank`). A row without them reads as a
    # baseline's ("none"), which never competes.
    spec_label = models.CharField(max_length=200, default="none", db_default="none")
    n_max = models.PositiveIntegerField(null=True, blank=True)
    hardware = models.ForeignKey(Hardware, on_delete=models.CASCADE, related_name="entries")
    engine_release = models.CharField(max_length=64)
    # The prompts its batches sent (`Run.prompt_set`): a baseline measured on the protocol's text
    # and beside an n-gram config on token-id prompts has a row, in a ranking, for each.
    prompt_set = models.CharField(max_length=16, blank=True, default="", db_default="")
    best_run = models.ForeignKey(Run, null=True, on_delete=models.SET_NULL, related_name="+")
    runs_count = models.PositiveIntegerField(default=0)
    tps_definition = models.CharField(max_length=16, choices=Run.Definition.choices)
    tokens_per_second = models.FloatField(db_index=True)
    n = models.PositiveIntegerField(default=0)
    stdev = models.FloatField(null=True)
    median = models.FloatField(null=True)
    ci95_low = models.FloatField(null=True)
    ci95_high = models.FloatField(null=True)
    end_to_end_tokens_per_second = models.FloatField(null=True)
    # Every request of every batch of the best one's tok/s definition, as one sample: the mean
    # and interval that best-of-k inflates and narrows, shown beside it.
    pooled_mean = models.FloatField(null=True)
    pooled_n = models.PositiveIntegerField(default=0, db_default=0)
    pooled_ci95_low = models.FloatField(null=True)
    pooled_ci95_high = models.FloatField(null=True)
    baseline_entry = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="paired_entries"
    )
    # The baseline batch the speedup is measured against (same backend, build flags and tok/s
    # definition), and why there is no speedup when the pairing was refused.
    baseline_run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    pairing_note = models.CharField(max_length=200, blank=True, default="", db_default="")
    speedup = models.FloatField(null=True, db_index=True)
    acceptance_rate = models.FloatField(null=True)
    tau = models.FloatField(null=True)
    lossless = models.BooleanField(null=True)
    # The worst fidelity verdict over the row's graded batches (Run.fidelity); empty if none.
    fidelity = models.CharField(max_length=16, blank=True, default="", db_default="")
    synthetic = models.BooleanField(default=False)
    self_reported = models.BooleanField(default=False)
    degenerate = models.BooleanField(default=False)
    retired = models.BooleanField(default=False)
    test_weights = models.BooleanField(default=False, db_default=False)
    # A batch's own baseline disagrees with the site's measurements of it beyond their intervals
    # (`verdicts.baselines`; pairing_note says how): kept off every ranking until they agree.
    baseline_disputed = models.BooleanField(default=False, db_default=False)
    peak_memory_bytes = models.BigIntegerField(null=True)
    updated_at = models.DateTimeField(default=timezone.now)
    # The verdicts (leaderboard.verdicts), decided when a run is recorded and read by every page:
    # the ranking this row is compared in (same workload, tok/s definition, hardware kind and
    # engine release) and its heading; the workload in words.
    ranking_key = models.CharField(max_length=16, blank=True, default="", db_default="")
    ranking_label = models.CharField(max_length=400, blank=True, default="", db_default="")
    workload_label = models.CharField(max_length=300, blank=True, default="", db_default="")
    # Its competition rank by tok/s in that ranking (null: not ranked, e.g. a baseline or a
    # kept-off row) and whether Welch's test tells it from the leader and the row above.
    rank = models.PositiveIntegerField(null=True, blank=True)
    like_leader = models.BooleanField(null=True, blank=True)
    like_above = models.BooleanField(null=True, blank=True)
    # The config's sample (its batch means with several batches, else its best batch's requests
    # or rounds: `interval_basis`) and that sample's 95% interval: what ties are decided on.
    config_mean = models.FloatField(null=True, blank=True)
    config_stdev = models.FloatField(null=True, blank=True)
    config_n = models.PositiveIntegerField(default=0, db_default=0)
    config_ci95_low = models.FloatField(null=True, blank=True)
    config_ci95_high = models.FloatField(null=True, blank=True)
    interval_basis = models.CharField(max_length=16, blank=True, default="", db_default="")
    # The speedup's 95% interval and what it is over ("batch speedups", "requests", "rounds").
    speedup_ci95_low = models.FloatField(null=True, blank=True)
    speedup_ci95_high = models.FloatField(null=True, blank=True)
    speedup_basis = models.CharField(max_length=16, blank=True, default="", db_default="")
    # The best batch is noisy (its interval reaches 0 or is wider than its mean): no answer
    # crowns such a row. Memorised: the protocol repeats one prompt (n-gram state carries over).
    noisy = models.BooleanField(default=False, db_default=False)
    # The baseline batch its speedup divides by (`baseline_run`) is noisy by the same rules: the
    # speedup rests on it, so no draft answer crowns the row while a clean one exists.
    baseline_noisy = models.BooleanField(default=False, db_default=False)
    memorised = models.BooleanField(default=False, db_default=False)
    # What its speculative figures rest on (the best batch's drafted tokens and verify steps), and
    # whether that is too little to say anything (`verdicts.evidence`): an anecdotal row is shown
    # with its counts and never crowned.
    draft_tokens = models.BigIntegerField(default=0, db_default=0)
    verify_steps = models.BigIntegerField(default=0, db_default=0)
    anecdotal = models.BooleanField(default=False, db_default=False)
    # Drafting that learns across requests, on prompts its records do not name (no prompt
    # hashes): labelled "prompts unknown" wherever the row is named, never counted as distinct.
    prompts_unknown = models.BooleanField(default=False, db_default=False)
    # Concurrency rows: where speculation stops paying, with its uncertainty ("between 2 and 4",
    # "not established", "not within 1-16").
    crossover = models.CharField(max_length=80, blank=True, default="", db_default="")

    class Meta:
        verbose_name_plural = "leaderboard entries"
        ordering = ["-tokens_per_second"]
        indexes = [
            # A ranking's rows with all that deciding its ranks reads (`services.board.rerank`,
            # on every run recorded in it): an index-only scan of 5,000 rows takes 1 ms on
            # PostgreSQL, where reading them from the table took 20 ms (one page a row).
            models.Index(
                fields=["ranking_key", "rank"],
                include=[
                    "id",
                    "tokens_per_second",
                    "config_mean",
                    "config_stdev",
                    "config_n",
                    "like_leader",
                    "like_above",
                    "spec_label",
                    "synthetic",
                    "self_reported",
                    "degenerate",
                    "retired",
                    "test_weights",
                    "baseline_disputed",
                ],
                name="entry_ranking_standing",
            ),
            # The board's order (selectors.board.leaderboard_entries): its first page is an
            # index scan that stops after 50 rows, not a sort of every row (bench/site_load.py:
            # 973 ms -> 6 ms at 200,000 rows).
            # tok/s is never null, so a plain descending key serves "-tokens_per_second" on
            # PostgreSQL and SQLite alike (SQLite has no NULLS LAST in an index).
            models.Index(
                fields=["ranking_label", "ranking_key", "-tokens_per_second", "id"],
                name="entry_board_order",
            ),
            # A ranking's baselines fastest first (`selectors.board.baseline_rows`, the
            # denominators every board page shows beside its rankings): a few rows of each
            # ranking, where walking its whole order for them read 2,000 rows of 28,000 index
            # entries at 1M runs (30 ms).
            models.Index(
                fields=["ranking_label", "ranking_key", "-tokens_per_second", "id"],
                condition=models.Q(spec_label="none"),
                name="entry_ranking_baselines",
            ),
            # The board's order within one target (the model page's ranked rows).
            models.Index(
                fields=["target_name", "ranking_label", "ranking_key", "-tokens_per_second", "id"],
                name="entry_target_board_order",
            ),
            # A target's drafts in one ranking by speedup (the glance, the draft advice).
            models.Index(
                fields=["target_name", "ranking_key", "-speedup"], name="entry_target_speedup"
            ),
            # A target's rows fastest first across its rankings (/best/ reads the first that
            # fit: 61 -> 10 ms at 2M rows).
            models.Index(
                fields=["target_name", "-tokens_per_second", "id"], name="entry_target_tps"
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["config", "hardware", "engine_release", "prompt_set"],
                name="one_entry_per_config_hardware_release_prompts",
            )
        ]

    def __str__(self) -> str:
        return f"{self.config} on {self.hardware} ({self.engine_release})"

    @property
    def evidence_note(self) -> str:
        """ "anecdotal: from 1 verify step, 6 drafted tokens" where anecdotal, else empty."""
        # The verdicts read models (workloads): imported here, not at the top.
        from leaderboard.verdicts import evidence as verdicts_evidence

        return verdicts_evidence.row_note(self)


class BoardVersion(models.Model):
    """A counter the services raise whenever leaderboard rows change; cached pages key on it.

    One row (id 1). Raised in the same transaction as the change, so a page read after the commit
    never finds an older page under the new number.
    """

    value = models.PositiveBigIntegerField(default=0)
    # Raised only when rows come, go or change what keeps them off the ranking: row counts and
    # filter choices are cached on it, so a new measurement of a known row does not redo them.
    row_set = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"leaderboard version {self.value} (row_set {self.row_set})"


class RankingVersion(models.Model):
    """When each ranking last changed: the board's counter (`BoardVersion.value`) as the change
    that touched it raised it (`board_version.raise_version`). A cached page notes the versions
    of the rankings it read and is kept across changes that touched none of them; key "*" stands
    for every change that names no ranking (every page then counts it as its own)."""

    key = models.CharField(max_length=32, primary_key=True)
    value = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"ranking {self.key} at {self.value}"


class RankingSummary(models.Model):
    """What one ranking holds of one target, decided again by `services.board.rerank` each time
    the ranking's rows change (every service that changes rows reranks the rankings it touched).
    The whole-board lists (targets and GPUs with rows, the filters' choices, the glance's pairs,
    /nmax/'s sweeps) read a row per ranking and target instead of grouping every leaderboard row
    (160,049 of them for 1,989,714 rows in bench/site_load.py's 10M-run board)."""

    ranking_key = models.CharField(max_length=16)
    target_name = models.CharField(max_length=200)
    hardware = models.ForeignKey(
        Hardware, on_delete=models.CASCADE, related_name="ranking_summaries"
    )
    ranking_label = models.CharField(max_length=400, blank=True, default="")
    # Every row; the speculative rows that compete and have a speedup (what the glance and the
    # draft advice choose among); the n_max of the rows that compete; every row's spec label.
    rows = models.PositiveIntegerField(default=0)
    drafts = models.PositiveIntegerField(default=0)
    n_max_values = models.JSONField(default=list)
    spec_labels = models.JSONField(default=list)
    # How many n_max values compete: the width of the ranking's n_max sweep of this target.
    sweep = models.PositiveIntegerField(default=0)
    # The speedup its draft answer leads with (`verdicts.leading_speedup`): whether a draft of
    # this target measured faster than no drafting in this workload, for the front page.
    lead_speedup = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["ranking_key", "target_name"], name="one_summary_per_ranking_target"
            )
        ]
        indexes = [
            # Whether a target has a sweep on a GPU (/nmax/'s choice), and the widest sweep.
            models.Index(fields=["target_name", "hardware", "-sweep"], name="summary_target_sweep"),
            models.Index(fields=["-sweep", "target_name", "hardware"], name="summary_widest_sweep"),
        ]

    def __str__(self) -> str:
        return f"ranking {self.ranking_key} of {self.target_name}: {self.rows} rows"


class ReporterPseudonym(models.Model):
    """What a user's unpublished self-reported results are keyed under instead of their name: a
    random value made once and stored only here, so one uploader's batches of a config still
    share a row while no config key or page leads back to the account (a key over the user name
    could be checked against every user name)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reporter_pseudonym"
    )
    value = models.CharField(max_length=32, unique=True)

    def __str__(self) -> str:
        return f"pseudonym of user {self.user_id}"
