"""The answers: which draft for a target, which config fits a GPU, which n_max wins.

Each answer is given within one ranking (`verdicts.workloads.ranking_key`: the same workload,
tok/s definition, hardware kind and engine release) and says which workload it comes from; an
answer that spans workloads lists one table per ranking, never one winner over all. Only rows
that compete (`verdicts.ranking.competes`) are answers. A noisy row (`verdicts.noise`) is
shown but never crowned while a clean one exists, nor one whose speedup divides by a noisy
baseline batch (`crownable`); an anecdotal one (`verdicts.evidence`: too few verify steps or
drafted tokens) is shown but never crowned at all. "Indistinguishable", "clearly slower" and
"clearly faster" are tests, not an overlap of intervals: Welch's test on the config estimates
for tok/s, the difference of log speedups against its standard error for speedups; where the
test cannot be made (one request, no spread) the row is "not tested".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderboard.verdicts.statistics import (
    Interval,
    indistinguishable,
    indistinguishable_pairs,
    ratios_indistinguishable,
    summary_sample,
)

FASTER = "faster"
SLOWER = "slower"
UNCLEAR = "unclear"
BELOW_ONE_NO_INTERVAL = "below 1, no interval"
# Where no test could be made, in words.
UNTESTED = "not tested"


def untested_reason(entry: Any) -> str:
    """Why a row could not be tested against another, in words: "not tested (one request)"
    where its batches measured one request each, else "not tested (no spread recorded)"."""
    n = getattr(entry, "n", None)
    n = (entry.config_n if n is None else n) or 0
    return f"{UNTESTED} ({'one request' if n <= 1 else 'no spread recorded'})"


def speedup_interval(entry: Any) -> Interval | None:
    """A row's stored speedup interval (decided when its run was recorded), or None."""
    low, high = entry.speedup_ci95_low, entry.speedup_ci95_high
    return (low, high) if low is not None and high is not None else None


def config_sample(entry: Any):
    """A row's config sample (batch means, or its one batch's requests or rounds)."""
    return summary_sample(entry.config_mean, entry.config_stdev, entry.config_n)


def against_baseline(interval: Interval | None, speedup: float) -> str | None:
    """Where a speedup stands against no drafting: "faster" or "slower" when its whole interval
    lies above or below 1, "unclear" when it holds 1; without an interval "below 1, no interval"
    for a point below 1, else None (not known)."""
    if interval is None:
        return BELOW_ONE_NO_INTERVAL if speedup < 1 else None
    low, high = interval
    return FASTER if low > 1 else SLOWER if high < 1 else UNCLEAR


def crownable(entry: Any) -> bool:
    """Whether a row may be an answer's crown while another exists: neither its best batch nor
    the baseline batch its speedup divides by is noisy (`verdicts.noise`), and its figures rest
    on enough drafting (not anecdotal, `verdicts.evidence`)."""
    return (
        not entry.noisy
        and not getattr(entry, "baseline_noisy", False)
        and not getattr(entry, "anecdotal", False)
    )


def leading_speedup(entries: Iterable[Any]) -> float | None:
    """The speedup a ranking's draft table leads with (`draft_tables`' leader): the highest among
    its crownable rows, else among all of them; None without a speedup."""
    found = [(crownable(entry), entry.speedup) for entry in entries if entry.speedup is not None]
    return max(found)[1] if found else None


def is_faster_than_none(speedup: float | None) -> bool:
    """Whether a draft measured faster than decoding without one (its speedup above 1x; how
    clearly is `against_baseline`'s word)."""
    return speedup is not None and speedup > 1


class _Readable:
    """An answer that templates, serializers and tests may read as a mapping too."""

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)


@dataclass
class DraftStanding(_Readable):
    """One way of drafting in one ranking: its best row and where it stands."""

    spec_label: str
    draft: str
    entry: Any
    interval: Interval | None
    configs: int
    leader: bool = False
    tied: bool = False
    tie_unknown: bool = False
    against_baseline: str | None = None
    anecdotal: bool = False


@dataclass
class DraftTable(_Readable):
    """One ranking's drafts, the fastest first, with its heading."""

    hardware: Any
    definition: str
    definition_label: str
    workload: str
    engine_release: str
    ranking_label: str
    drafts: list[DraftStanding] = field(default_factory=list)
    none_pays: bool = False
    ranking_key: str = ""

    @property
    def tied(self) -> int:
        """How many drafts the test cannot tell from the fastest."""
        return sum(draft.tied for draft in self.drafts)


def _best_of(entries: Sequence[Any]) -> Any:
    """A draft's row in a ranking: its highest speedup among crownable rows, else among all."""
    clean = [entry for entry in entries if crownable(entry)]
    return max(clean or entries, key=lambda e: (e.speedup, -e.pk))


def draft_tables(entries: Iterable[Any]) -> list[DraftTable]:
    """Per ranking, each speculative type and draft file by its best speedup: the fastest clean
    one leads (an anecdotal one never does: a table of anecdotes has no leader); the others are
    tied with it when the test cannot tell them apart."""
    tables: dict[str, DraftTable] = {}
    by_draft: dict[str, dict[tuple[str, str], list[Any]]] = {}
    for entry in entries:
        if entry.speedup is None or entry.rank is None:
            continue
        key = entry.ranking_key
        if key not in tables:
            tables[key] = DraftTable(
                hardware=entry.hardware,
                definition=entry.tps_definition,
                definition_label=entry.get_tps_definition_display(),
                workload=entry.workload_label or entry.config.protocol,
                engine_release=entry.engine_release,
                ranking_label=entry.ranking_label,
                ranking_key=key,
            )
            by_draft[key] = {}
        draft = entry.config.draft.name if entry.config.draft_id else ""
        by_draft[key].setdefault((entry.config.spec_label, draft), []).append(entry)
    for key, table in tables.items():
        table.drafts = _standings(by_draft[key])
        table.none_pays = all(
            d.against_baseline in (SLOWER, BELOW_ONE_NO_INTERVAL) for d in table.drafts
        )
    return sorted(
        tables.values(),
        key=lambda t: (t.hardware.gpu_name, t.workload, t.definition, t.engine_release),
    )


def _standings(by_draft: dict[tuple[str, str], list[Any]]) -> list[DraftStanding]:
    """One ranking's drafts, each by its best row, the leader first (an anecdote never leads),
    each with its word against no drafting and whether it is tied with the leader."""
    standings = []
    for (spec_label, draft), rows in by_draft.items():
        best = _best_of(rows)
        standings.append(
            DraftStanding(
                spec_label=spec_label,
                draft=draft,
                entry=best,
                interval=speedup_interval(best),
                configs=len({row.config_id for row in rows}),
                anecdotal=bool(getattr(best, "anecdotal", False)),
            )
        )
    standings.sort(
        key=lambda d: (d.anecdotal, not crownable(d.entry), -d.entry.speedup, d.spec_label, d.draft)
    )
    leader = standings[0]
    leader.leader = not leader.anecdotal
    for standing in standings:
        standing.against_baseline = (
            None
            if standing.anecdotal
            else against_baseline(standing.interval, standing.entry.speedup)
        )
        if standing is leader or standing.anecdotal:
            # An anecdote is set against nothing: it says "anecdotal", not a test's word
            # (anecdotes sort last, so a leader that is one leads a table of anecdotes).
            continue
        same = ratios_indistinguishable(
            standing.entry.speedup, standing.interval, leader.entry.speedup, leader.interval
        )
        standing.tied = bool(same)
        standing.tie_unknown = same is None
    return standings


@dataclass(frozen=True)
class WorkloadLead:
    """One ranking of a GPU kind and target as the front page chooses among them: its key, its
    label and the speedup its draft table leads with (`leading_speedup`)."""

    ranking_key: str
    ranking_label: str
    speedup: float | None


def answer_order(lead: WorkloadLead | DraftTable) -> tuple[str, str]:
    """The order in which an answer names its workloads: by its ranking's label (then key), so
    it never follows what was submitted last nor how many configs each workload has."""
    return (lead.ranking_label, lead.ranking_key)


def answer_workloads(
    leads: Iterable[WorkloadLead], *, limit: int
) -> tuple[list[WorkloadLead], int]:
    """The workloads a GPU kind and target's first answer names, and how many more it leaves
    out: every workload whose leading draft measured faster than no drafting, in `answer_order`
    (up to `limit`); where none did, the least slow alone (the highest lead, `answer_order` on
    a tie). The front chart shows the first of them."""
    found = [lead for lead in leads if lead.speedup is not None]
    faster = sorted((lead for lead in found if is_faster_than_none(lead.speedup)), key=answer_order)
    if faster:
        return faster[:limit], max(len(faster) - limit, 0)
    if not found:
        return [], 0
    least_slow = min(found, key=lambda lead: (-(lead.speedup or 0.0), answer_order(lead)))
    return [least_slow], 0


@dataclass
class FirstAnswer(_Readable):
    """The front page's answer for one GPU kind and target: the draft table of every workload
    where a draft measured faster than no drafting (in `answer_order`), or, where none did, the
    least slow workload's table alone (`none_faster`)."""

    hardware: Any
    target: str
    tables: list[DraftTable]
    none_faster: bool
    # How many workloads measured a ranked draft of the target on the GPU; how many of those
    # with a faster draft are not named (past the answer's limit).
    workloads: int
    more: int = 0

    @property
    def others(self) -> int:
        """The workloads measured but not named: no draft faster there, or past the limit."""
        return self.workloads - len(self.tables) - self.more


def first_answer(
    *, hardware: Any, target: str, tables: Iterable[DraftTable], workloads: int, more: int = 0
) -> FirstAnswer:
    """One GPU kind and target's answer from the draft tables of the workloads `answer_workloads`
    named: the tables whose leading draft is faster than no drafting, in `answer_order`; where
    none is, the least slow one."""
    given = [table for table in tables if table.drafts]
    faster = sorted(
        (t for t in given if is_faster_than_none(t.drafts[0].entry.speedup)), key=answer_order
    )
    if faster or not given:
        return FirstAnswer(hardware, target, faster, False, max(workloads, len(faster)), more)
    least_slow = min(given, key=lambda t: (-t.drafts[0].entry.speedup, answer_order(t)))
    return FirstAnswer(hardware, target, [least_slow], True, max(workloads, 1), more)


@dataclass
class FitAnswer(_Readable):
    """The fastest config of one ranking that fits the memory, what Welch's test cannot tell
    from it (`tied`), what it tells apart as slower (`others`, "clearly slower"), what it could
    not test (`untested`, each with `untested_reason`), and the ranking's baseline."""

    ranking_label: str
    workload: str
    best: Any
    tied: list[Any]
    others: list[Any]
    baseline: Any | None
    untested: list[Any] = field(default_factory=list)

    @property
    def best_tested(self) -> bool:
        """Whether the answer itself can be tested (a config sample with spread)."""
        sample = config_sample(self.best)
        return bool(sample and sample.has_spread)


def _one_baseline(rows: list[Any]) -> list[Any]:
    """The rows with one baseline: baseline configs of one ranking differ at most in how many
    runs they took (the ranking's workload leaves that out), so they are one baseline, the first
    in the answer's order."""
    first = next((row for row in rows if not row.config.is_speculative), None)
    return [row for row in rows if row.config.is_speculative or row is first]


def fitting_answers(entries: Iterable[Any]) -> list[FitAnswer]:
    """Per ranking, the fastest clean row among those given (they fit the memory; a baseline is
    a candidate too: decoding without a draft can be the answer; a noisy or anecdotal row only
    when nothing else fits), the rows Welch's test cannot tell from it, those it tells apart,
    those it could not test, and the ranking's baseline (one, however many baseline configs
    measured it) as the denominator."""
    grouped: dict[str, list[Any]] = {}
    for entry in entries:
        grouped.setdefault(entry.ranking_key, []).append(entry)
    answers = []
    for rows in grouped.values():
        rows.sort(key=lambda e: (not crownable(e), -e.tokens_per_second, e.pk))
        rows = _one_baseline(rows)
        best = rows[0]
        tied: list[Any] = []
        others: list[Any] = []
        untested: list[Any] = []
        # The ranking's rows against its best, Welch's test computed for all of them at once.
        best_sample = config_sample(best)
        alike = indistinguishable_pairs([(config_sample(row), best_sample) for row in rows[1:]])
        for row, same in zip(rows[1:], alike, strict=True):
            if same is None:
                untested.append(row)
            else:
                (tied if same else others).append(row)
        baseline = next((row for row in rows if not row.config.is_speculative), None)
        answers.append(
            FitAnswer(
                ranking_label=best.ranking_label,
                workload=best.workload_label,
                best=best,
                tied=tied,
                others=others,
                baseline=baseline if baseline is not best else None,
                untested=untested,
            )
        )
    # The fastest answer first: a reader with memory to spare wants the quickest setup.
    return sorted(answers, key=lambda a: (-a.best.tokens_per_second, a.ranking_label))


def best_n_max(points: Sequence[Any]) -> Any | None:
    """The n_max row a sweep crowns: the fastest that competes and is neither noisy nor
    anecdotal; None when no point does (a degenerate, noisy or anecdotal point is never
    crowned)."""
    crowned = [p for p in points if p.rank is not None and crownable(p)]
    return max(crowned, key=lambda e: (e.tokens_per_second, -e.pk)) if crowned else None


def clearly_faster(entry: Any, other: Any) -> bool:
    """Whether a row is clearly faster than another: higher, and Welch's test tells them apart."""
    same = indistinguishable(config_sample(entry), config_sample(other))
    return same is False and entry.tokens_per_second > other.tokens_per_second


def tied(entry: Any, other: Any) -> bool:
    """Whether Welch's test cannot tell two rows apart (False where it cannot be asked)."""
    return bool(indistinguishable(config_sample(entry), config_sample(other)))
