"""The leaderboard itself: which rows a page shows, in what order, with what rank.

It owns the board's vocabulary (sources, protocols and `RANKED`, the rows that compete; the
orderings live with the ranks), the filtered and sorted `leaderboard_entries` with the choices
its filters offer, staleness against the newest engine release measured by our workers, the
rows a page renders (`leaderboard_rows`: each with its rank from `selectors.board.ranks`, its
numbers' definitions and their evidence; `row_places`, what a page shows of a row but its figures),
the memory-fit recommendation `best_config_for` (its rows read as values, `FitRow`), and
`leaderboard_from_runs`, the read-time aggregate kept for benchmarks. The front page's answer
per GPU and target is `selectors.board.glance`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from django.db.models import (
    FETCH_PEERS,
    BigIntegerField,
    Count,
    Exists,
    ExpressionWrapper,
    F,
    Max,
    OuterRef,
    Q,
    QuerySet,
)
from django.db.models.functions import Coalesce

from leaderboard import verdicts
from leaderboard.models import (
    Config,
    EngineBuild,
    GpuHost,
    Hardware,
    Job,
    LeaderboardEntry,
    RankingSummary,
    Run,
)
from leaderboard.selectors.board.ranks import LEADERBOARD_ORDERINGS, NOT_RANKED, PageRank
from leaderboard.selectors.evidence.definitions import (
    LEGEND,
    row_definitions,
    row_evidence,
)
from leaderboard.verdicts.workloads import SEED_CSV_PROTOCOL, SEED_CSV_PROTOCOL_LABEL
from runner.config import SPEC_TYPES
from runner.protocols import PROTOCOLS as RUNNER_PROTOCOLS

SOURCES = {
    "all": "all results",
    "measured": "measured by our workers",
    "self-reported": "self-reported",
}
# The runner's protocols (its registry), then the seed kit's imports.
PROTOCOLS = (*RUNNER_PROTOCOLS, SEED_CSV_PROTOCOL)
# What a protocol value means to a reader; values not listed read as themselves.
PROTOCOL_LABELS = {SEED_CSV_PROTOCOL: SEED_CSV_PROTOCOL_LABEL}
# The rows that compete in the main ranking: measured by our workers on a good build, the real
# output of real model weights (test weights, such as the tiny random-weight fixtures, say
# nothing). The verdicts' flags: a row with any of them competes in no ranking.
RANKED = Q(**dict.fromkeys(verdicts.KEPT_OFF_FLAGS, False))
# Of those, the baselines: the denominators of the speedups, shown apart and never ranked.
BASELINE = Q(config__spec_label="none")


def competing_drafts(**filters: object) -> QuerySet[LeaderboardEntry]:
    """Speculative rows that compete in their ranking and have a speedup: what the draft advice,
    the glance and the front chart choose among. Told from the baselines by the row's own copy
    of its config's speculative type, so the filter needs no config (no gain was measured: at
    1M runs PostgreSQL still hashes every config for the select, at 10M it reads them by key)."""
    return LeaderboardEntry.objects.filter(
        RANKED, speedup__isnull=False, rank__isnull=False, **filters
    ).exclude(spec_label="none")


def spec_type_q(spec_type: str) -> Q:
    """Rows whose config uses this speculative type (an exact match on its stored types);
    "none" means the baselines."""
    if spec_type == "none":
        return Q(config__spec_label="none")
    return Q(config__spec_types__name=spec_type)


# What a board row reads of its relations, fetched with it: its config and hardware. Anything
# else a page reads of a relation (a row's paired baseline, for one recorded before the pairing
# kept its batch) is fetched for the page's rows at once (FETCH_PEERS), never row by row.
BOARD_RELATIONS = ("config", "hardware")


def board_rows() -> QuerySet[LeaderboardEntry]:
    """Leaderboard rows with their config and hardware (`BOARD_RELATIONS`), any other relation
    a page reads fetched for its rows at once."""
    return LeaderboardEntry.objects.select_related(*BOARD_RELATIONS).fetch_mode(FETCH_PEERS)


def with_baseline_configs(entries: QuerySet[LeaderboardEntry]) -> QuerySet[LeaderboardEntry]:
    """These rows with their paired baseline row and its config (the API's baseline_config_key),
    not that config's canonical JSON, which no row shows."""
    return entries.select_related("baseline_entry__config").defer(
        "baseline_entry__config__canonical"
    )


def leaderboard_entries(
    *,
    target: str = "",
    hardware: str = "",
    spec_type: str = "",
    protocol: str = "",
    source: str = "all",
    ordering: str = "tokens_per_second",
    include_retired: bool = False,
    search: str = "",
    ranked_only: bool = False,
    baselines: bool = False,
) -> QuerySet[LeaderboardEntry]:
    """Leaderboard rows, filtered, one ranking after another (`verdicts.workloads`: the same
    workload, tok/s definition, hardware and release), each sorted best first; rows without the
    sort value come last in theirs.

    `ranked_only` keeps synthetic, test-weight, self-reported, degenerate and retired rows out,
    and the baselines, unless `baselines` asks for the baselines alone.
    """
    entries = board_rows()
    if not include_retired:
        entries = entries.filter(retired=False)
    if ranked_only:
        entries = entries.filter(RANKED)
        entries = entries.filter(BASELINE) if baselines else entries.exclude(BASELINE)
    elif baselines:
        entries = entries.filter(BASELINE)
    if search:
        entries = entries.filter(
            Q(config__label__icontains=search)
            | Q(config__target_name__icontains=search)
            | Q(hardware__gpu_name__icontains=search)
            | Q(engine_release__icontains=search)
            | Q(config__key__startswith=search)
        )
    if target:
        entries = entries.filter(target_name=target)
    if hardware:
        entries = entries.filter(hardware__slug=hardware)
    if spec_type:
        entries = entries.filter(spec_type_q(spec_type))
    if protocol:
        entries = entries.filter(config__protocol=protocol)
    if source == "measured":
        entries = entries.filter(self_reported=False)
    elif source == "self-reported":
        entries = entries.filter(self_reported=True)
    field = ordering if ordering in LEADERBOARD_ORDERINGS else "tokens_per_second"
    if field == "tokens_per_second":
        # Never null: the board's index (ranking_label, ranking_key, -tokens_per_second, id).
        return entries.order_by("ranking_label", "ranking_key", "-tokens_per_second", "id")
    return entries.order_by(
        "ranking_label", "ranking_key", F(field).desc(nulls_last=True), "-tokens_per_second", "id"
    )


def leaderboard_filter_choices() -> dict[str, list[tuple[str, str]]]:
    """The values that the leaderboard's filters offer, from the data present."""
    # The targets, spec labels and GPUs on the board, from the rankings' summaries (order_by()
    # drops the default ordering, which DISTINCT would otherwise include).
    summaries = RankingSummary.objects.order_by()
    targets = set(summaries.values_list("target_name", flat=True).distinct())
    labels = {
        label
        for spec_labels in summaries.values_list("spec_labels", flat=True).distinct()
        for label in spec_labels
    }
    hardware = (
        Hardware.objects.filter(Exists(RankingSummary.objects.filter(hardware=OuterRef("pk"))))
        .order_by("slug")
        .only("slug", "gpu_name", "memory_bytes", "gpu_count", "gpus")
    )
    present = sorted({part for label in labels for part in label.split(",")} - {"none"})
    spec_types = [("none", "none (baseline)")] + [(t, t) for t in present]
    spec_types += [(t, t) for t in SPEC_TYPES if t not in present]
    return {
        "target": [(t, t) for t in sorted(targets)],
        # A kind of several GPUs by its count: "2x RTX 3090 24GB (2x-rtx-3090-24gb)".
        "hardware": [(kind.slug, f"{kind.label} ({kind.slug})") for kind in hardware],
        "spec_type": spec_types,
        "protocol": [(p, PROTOCOL_LABELS.get(p, p)) for p in PROTOCOLS],
        "source": list(SOURCES.items()),
        "ordering": list(LEADERBOARD_ORDERINGS.items()),
    }


_RELEASE_NUMBER = re.compile(r"(\d+)")


def release_number(release: str) -> int | None:
    """llama.cpp releases are numbered builds (b11434); None for anything else ('unreported')."""
    match = _RELEASE_NUMBER.search(release or "")
    return int(match.group(1)) if match else None


def newest_release_number() -> int | None:
    """The newest engine release that a current measured row was measured with, among the
    releases the site knows: one a job asked for or an admin registered a GPU host for. A
    release string in a self-reported upload or in a host's result is a claim, so on its own it
    never makes measured rows stale."""
    # The builds table is small; EXISTS asks the rows only whether each release is still in use.
    in_use = Exists(
        LeaderboardEntry.objects.filter(
            engine_release=OuterRef("release"), retired=False, self_reported=False
        )
    )
    known = Exists(Job.objects.filter(engine_release=OuterRef("release"))) | Exists(
        GpuHost.objects.filter(engine_release=OuterRef("release"))
    )
    releases = EngineBuild.objects.filter(in_use, known).values_list("release", flat=True)
    numbers = [n for n in map(release_number, releases) if n is not None]
    return max(numbers, default=None)


def is_stale(release: str, newest: int | None) -> bool:
    """Whether a release is older than the newest measured one in use."""
    number = release_number(release)
    return newest is not None and number is not None and number < newest


class _PageEvidence:
    """The evidence and definitions of a page's rows (`row_evidence`, `row_definitions`), read
    when first looked at: for every row of the page not read yet, in one go. A board that keeps its rendered rows renders few of them after a
    change, and reads the evidence of those alone."""

    def __init__(self, entries: list[LeaderboardEntry]) -> None:
        self.entries = entries
        self.read: dict[int, tuple[dict, dict]] = {}

    def fetch(self, entries: Sequence[LeaderboardEntry] | None = None) -> None:
        todo = [e for e in (self.entries if entries is None else entries) if e.pk not in self.read]
        if todo:
            found = row_evidence(entries=todo)
            for entry in todo:
                self.read[entry.pk] = (found[entry.pk], row_definitions(entry, found[entry.pk]))

    def part(self, entry: LeaderboardEntry, index: int) -> dict:
        if entry.pk not in self.read:
            self.fetch()
        return self.read[entry.pk][index]


class RowEvidence(Mapping):
    """A row's evidence (or its numbers' definitions), as a mapping read on first use."""

    def __init__(self, page: _PageEvidence, entry: LeaderboardEntry, index: int) -> None:
        self.page, self.entry, self.index = page, entry, index

    def _value(self) -> dict:
        return self.page.part(self.entry, self.index)

    def __getitem__(self, key: str) -> object:
        return self._value()[key]

    def __iter__(self):
        return iter(self._value())

    def __len__(self) -> int:
        return len(self._value())

    def __repr__(self) -> str:
        return repr(self._value())


def leaderboard_rows(
    *, entries: list[LeaderboardEntry], ranks: dict[int, PageRank], newest: int | None
) -> list[dict]:
    """The rows a page shows: each entry with its rank in its ranking and the tie labels, the
    ranking's heading where a new ranking starts on the page, staleness, and what each of its
    numbers means with its evidence (read when first looked at: `RowEvidence`)."""
    speculative = [entry.config.is_speculative for entry in entries]
    rows = row_places(entries, speculative=speculative, ranks=ranks, newest=newest)
    attach_entries(rows, entries)
    return rows


def attach_entries(rows: Sequence[dict], entries: Sequence[LeaderboardEntry]) -> None:
    """Give these rows (`row_places`) their models, one each in the same order, with their
    evidence and definitions, read when first looked at and for all of them at once."""
    evidence = _PageEvidence(list(entries))
    for row, entry in zip(rows, entries, strict=True):
        row["entry"] = entry
        row["evidence"] = RowEvidence(evidence, entry, 0)
        row["definitions"] = RowEvidence(evidence, entry, 1)


class RankedRow(Protocol):
    """What a page reads of a row beside its figures, a model or a `row_content.ContentRow`."""

    @property
    def pk(self) -> int: ...
    @property
    def ranking_label(self) -> str: ...
    @property
    def ranking_key(self) -> str: ...
    @property
    def engine_release(self) -> str: ...
    @property
    def pairing_note(self) -> str: ...


def row_places(
    entries: Sequence[RankedRow],
    *,
    speculative: Sequence[bool],
    ranks: Mapping[int, PageRank],
    newest: int | None,
) -> list[dict]:
    """What a page shows of its rows but their own figures: each row's rank in its ranking and
    the tie labels, the ranking's heading where a new ranking starts on the page, why it is not
    ranked, staleness, whether it drafts, and the legend."""
    rows = []
    previous = None
    for entry, drafts in zip(entries, speculative, strict=True):
        standing = ranks.get(entry.pk, NOT_RANKED)
        rows.append(
            {
                "rank": standing.rank,
                "like_leader": standing.like_leader,
                "like_above": standing.like_above,
                # Kept for the templates that mark a row tied with its leader.
                "tied": bool(standing.like_leader),
                "heading": entry.ranking_label if entry.ranking_key != previous else "",
                "unranked": _unranked_reason(entry, speculative=drafts),
                "stale": is_stale(entry.engine_release, newest),
                "speculative": drafts,
                "legend": LEGEND,
            }
        )
        previous = entry.ranking_key
    return rows


def _unranked_reason(entry: RankedRow, *, speculative: bool) -> str:
    """Why a row carries no rank, in words."""
    if not speculative:
        return "a baseline: the denominator of its ranking's speedups, never ranked"
    flags = [flag.replace("_", " ") for flag in verdicts.KEPT_OFF_FLAGS if getattr(entry, flag)]
    if flags:
        reason = "kept off the ranking: " + ", ".join(flags)
        # The disputed baseline's figures, in words (`verdicts.baselines`).
        disputed = getattr(entry, "baseline_disputed", False) and entry.pairing_note
        return f"{reason} ({entry.pairing_note})" if disputed else reason
    return "no value for the sorted column"


def baseline_rows(*, rankings: Sequence[RankedRow]) -> list[LeaderboardEntry]:
    """The baselines (the denominators) of the rankings of the given rows, one per ranking where
    measured (its fastest, if targets share it), in the board's order: the first of each
    ranking's baselines down their own index (`entry_ranking_baselines`, on the row's copy of
    its config's speculative type; the config's is asked too)."""
    wanted = {(entry.ranking_label, entry.ranking_key) for entry in rankings}
    found = []
    for label, key in sorted(wanted):
        row = (
            LeaderboardEntry.objects.filter(
                RANKED, BASELINE, spec_label="none", ranking_label=label, ranking_key=key
            )
            .select_related("config", "hardware")
            .order_by("-tokens_per_second", "id")
            .first()
        )
        if row is not None:
            found.append(row)
    return found


def best_config_for(
    *, target_name: str, memory_bytes: int, hardware: Hardware | None = None, gpu_count: int = 1
) -> list:
    """Per ranking (one workload, definition, GPU kind and release), the fastest config that fits
    the memory, lossless (or plain baseline) and measured, with the configs Welch's test cannot
    tell from it and the ranking's baseline as the denominator (`verdicts.advice.fitting_answers`).

    `memory_bytes` is each GPU's memory and `gpu_count` how many there are: a row measured on a
    kind of N GPUs answers when N is at most that many and its peak (their total at one moment)
    is within N such GPUs' memory, so one person's two 24 GB cards see the single-GPU rows that
    fit one card and the two-GPU rows, and never a row measured on four."""
    on_its_gpus = ExpressionWrapper(
        F("hardware__gpu_count") * memory_bytes, output_field=BigIntegerField()
    )
    entries = LeaderboardEntry.objects.filter(
        RANKED,
        Q(lossless=True) | BASELINE,
        target_name=target_name,
        peak_memory_bytes__isnull=False,
        peak_memory_bytes__lte=on_its_gpus,
        hardware__gpu_count__lte=gpu_count,
    )
    if hardware is not None:
        entries = entries.filter(hardware=hardware)
    # Up to 500 rows, read as values: only the columns the answers and the page read (a row
    # has 57, its config a canonical JSON document), with what the peak memory was (GPU or
    # process, for templatetags.run_display.peak_memory). Building them as models with their
    # config and hardware was 40% of the page's time.
    values = entries.order_by("-tokens_per_second", "id").values_list(
        *FitRow.COLUMNS, "best_run__memory_kind"
    )[:500]
    rows = list(values)
    kinds = Hardware.objects.in_bulk({row[FitRow.HARDWARE] for row in rows})
    return verdicts.fitting_answers(FitRow.of(row, kinds) for row in rows)


@dataclass(frozen=True, slots=True)
class FitConfig:
    """What /best/ shows of a row's config."""

    key: str
    label: str
    spec_label: str

    @property
    def is_speculative(self) -> bool:
        return self.spec_label != "none"


@dataclass(frozen=True, slots=True)
class FitRow:
    """A leaderboard row as `best_config_for`'s answers read it (`verdicts.fitting_answers` and
    best.html): its figures, its config's key, label and type, its hardware kind (one instance
    per kind, shared) and what its peak memory was."""

    pk: int
    ranking_key: str
    ranking_label: str
    workload_label: str
    noisy: bool
    memorised: bool
    prompts_unknown: bool
    tokens_per_second: float
    ci95_low: float | None
    ci95_high: float | None
    n: int
    speedup: float | None
    speedup_ci95_low: float | None
    speedup_ci95_high: float | None
    config_mean: float | None
    config_stdev: float | None
    config_n: int | None
    config_ci95_low: float | None
    config_ci95_high: float | None
    interval_basis: str
    peak_memory_bytes: int | None
    anecdotal: bool
    draft_tokens: int
    verify_steps: int
    tau: float | None
    config: FitConfig
    hardware: Hardware
    memory_kind: str | None

    # The columns read for one, in its fields' order up to `config`; then the hardware's id.
    COLUMNS: ClassVar[tuple[str, ...]] = (
        "pk", "ranking_key", "ranking_label", "workload_label", "noisy", "memorised",
        "prompts_unknown", "tokens_per_second",
        "ci95_low", "ci95_high", "n", "speedup", "speedup_ci95_low", "speedup_ci95_high",
        "config_mean", "config_stdev", "config_n", "config_ci95_low", "config_ci95_high",
        "interval_basis", "peak_memory_bytes", "anecdotal", "draft_tokens", "verify_steps",
        "tau", "config__key", "config__label", "config__spec_label", "hardware_id",
    )  # fmt: skip
    OWN: ClassVar[int] = 25
    HARDWARE: ClassVar[int] = 28

    @classmethod
    def of(cls, values: Sequence[Any], kinds: Mapping[int, Hardware]) -> FitRow:
        """One from a tuple of `COLUMNS` and its best batch's memory kind, with its hardware kind
        from `kinds`."""
        return cls(
            **dict(zip(cls.COLUMNS[: cls.OWN], values[: cls.OWN], strict=True)),
            config=FitConfig(*values[cls.OWN : cls.HARDWARE]),
            hardware=kinds[values[cls.HARDWARE]],
            memory_kind=values[cls.HARDWARE + 1],
        )

    @property
    def evidence_note(self) -> str:
        """ "anecdotal: from 1 verify step, 6 drafted tokens" where anecdotal
        (`verdicts.evidence`)."""
        return verdicts.row_note(self)

    @property
    def untested_reason(self) -> str:
        """ "not tested (one request)" where no test against the answer could be made."""
        return verdicts.untested_reason(self)


def leaderboard_from_runs(*, limit: int = 50) -> list[dict]:
    """The leaderboard's first page aggregated from every run at read time.

    Only for comparison (bench/site_load.py): the site reads the maintained LeaderboardEntry rows.
    """
    groups = list(
        Run.objects.filter(degenerate=False)
        .values("config_id", "hardware_id", "engine_release")
        .annotate(fastest=Max(Coalesce("decode_mean", "e2e_mean")), runs_count=Count("id"))
        .order_by(F("fastest").desc(nulls_last=True), "config_id", "hardware_id")[:limit]
    )
    configs = Config.objects.in_bulk({row["config_id"] for row in groups})
    hardware = Hardware.objects.in_bulk({row["hardware_id"] for row in groups})
    return [
        {
            "config": configs[row["config_id"]].key,
            "label": configs[row["config_id"]].label,
            "target_name": configs[row["config_id"]].target_name,
            "spec_label": configs[row["config_id"]].spec_label,
            "hardware": hardware[row["hardware_id"]].slug,
            "engine_release": row["engine_release"],
            "tokens_per_second": row["fastest"],
            "runs_count": row["runs_count"],
        }
        for row in groups
    ]
