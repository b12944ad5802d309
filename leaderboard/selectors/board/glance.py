"""The front page's first answer: per GPU kind and target, the fastest draft of every workload
where a draft measured faster than no drafting, or the least slow one where none did, as the
verdicts decide it (`verdicts.answer_workloads`, `verdicts.draft_tables`,
`verdicts.first_answer`).

Which pairs have an answer comes from the rankings' summaries; which workloads each shown pair's
answer names from their leads (one query), and the answers from those workloads' rows (one
query). The glance says what it shows (`Glance.rankings`): each shown pair's answer key, raised
when which workloads it names may change (`board_version.answer_key`), and the rankings named."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber

from leaderboard import verdicts
from leaderboard.models import RankingSummary
from leaderboard.selectors.answers.draft_rows import DraftRow, draft_rows
from leaderboard.selectors.board.rows import competing_drafts
from leaderboard.web import board_version

# The front page's answers at most: one per GPU kind and target.
GLANCE_LIMIT = 12
# The workloads one answer names at most (the model page has each).
GLANCE_WORKLOADS = 5
# The fastest rows by speedup a workload's answer is decided from.
GLANCE_ROWS = 500

# A pair: (GPU name, its slug, target, hardware id, the keys of its rankings with drafts).
Pair = tuple[str, str, str, int, tuple[str, ...]]


@dataclass(frozen=True)
class Glance:
    """The front page's first answers, and how many GPU and target pairs it leaves out."""

    answers: list[verdicts.FirstAnswer]
    pairs_left: int = 0
    # The answer keys and the rankings it shows (`board_version`).
    rankings: frozenset[str] = frozenset()


def fastest_drafts() -> Glance:
    """Per GPU kind and target with ranked speedups, the verdicts' first answer (up to
    `GLANCE_LIMIT`, by GPU and target): the draft table of every workload whose leading draft
    measured faster than no drafting, in the verdicts' stable order (up to `GLANCE_WORKLOADS`,
    counting the rest), else the least slow workload's."""
    pairs = _glance_pairs()
    shown = pairs[:GLANCE_LIMIT]
    if not shown:
        return Glance(answers=[])
    named = _named(shown)
    answers = _answers(list(zip(shown, named, strict=True)))
    rankings = {board_version.answer_key(pair[3], pair[2]) for pair in shown}
    rankings |= {key for keys, _, _ in named for key in keys}
    return Glance(
        answers=[answer for answer in answers if answer is not None],
        pairs_left=len(pairs) - len(shown),
        rankings=frozenset(rankings),
    )


def _glance_pairs() -> list[Pair]:
    """Every GPU kind and target with ranked speedups, in the front page's order (GPU name, slug,
    target), each with its rankings that have them, from the rankings' summaries."""
    found = RankingSummary.objects.filter(drafts__gt=0).values_list(
        "hardware_id", "hardware__gpu_name", "hardware__slug", "target_name", "ranking_key"
    )
    keys: dict[tuple[int, str], list[str]] = {}
    names: dict[int, tuple[str, str]] = {}
    for hardware_id, gpu_name, slug, target, key in found:
        names[hardware_id] = (gpu_name, slug)
        keys.setdefault((hardware_id, target), []).append(key)
    return sorted(
        (*names[hardware_id], target, hardware_id, tuple(sorted(found_keys)))
        for (hardware_id, target), found_keys in keys.items()
    )


# Which workloads a pair's answer names: their ranking keys, how many more have a faster draft
# and how many workloads the pair has.
Named = tuple[tuple[str, ...], int, int]


def _named(pairs: list[Pair]) -> list[Named]:
    """Each pair's named workloads (`verdicts.answer_workloads`), from its rankings' leads in
    their summaries: one query for every pair."""
    wanted = Q()
    for _, _, target, hardware_id, keys in pairs:
        wanted |= Q(target_name=target, hardware_id=hardware_id, ranking_key__in=keys)
    leads: dict[tuple[int, str], list[verdicts.WorkloadLead]] = {}
    for hardware_id, target, key, label, speedup in RankingSummary.objects.filter(
        wanted, drafts__gt=0
    ).values_list("hardware_id", "target_name", "ranking_key", "ranking_label", "lead_speedup"):
        leads.setdefault((hardware_id, target), []).append(
            verdicts.WorkloadLead(ranking_key=key, ranking_label=label, speedup=speedup)
        )
    found = []
    for pair in pairs:
        pair_leads = leads.get((pair[3], pair[2]), [])
        chosen, more = verdicts.answer_workloads(pair_leads, limit=GLANCE_WORKLOADS)
        found.append((tuple(lead.ranking_key for lead in chosen), more, len(pair_leads)))
    return found


def _answers(items: list[tuple[Pair, Named]]) -> list[verdicts.FirstAnswer | None]:
    """Each pair's first answer: the draft tables of the workloads it names, each decided from
    its fastest rows (one read for every pair)."""
    rows = _glance_rows([(pair[2], key) for pair, (keys, _, _) in items for key in keys])
    answers: list[verdicts.FirstAnswer | None] = []
    for pair, (keys, more, workloads) in items:
        tables = [
            table
            for key in keys
            for table in verdicts.draft_tables(rows.get((pair[2], key), []))
            # A table of anecdotes has no leader (`verdicts.evidence`): nothing to crown there.
            if table.drafts[0].leader
        ]
        answers.append(
            verdicts.first_answer(
                # The GPU kind its rows read (`draft_rows`: one instance per kind).
                hardware=tables[0].hardware,
                target=pair[2],
                tables=tables,
                workloads=workloads,
                more=more,
            )
            if tables
            else None
        )
    return answers


def _glance_rows(wanted_rankings: list[tuple[str, str]]) -> dict[tuple[str, str], list[DraftRow]]:
    """Each (target, ranking)'s fastest rows by speedup (they hold each draft's best, which the
    verdicts pick among), read as values (`draft_rows`): one query for all of them, an index
    range of `entry_target_speedup` each."""
    if not wanted_rankings:
        return {}
    wanted = Q()
    for target, key in wanted_rankings:
        wanted |= Q(target_name=target, ranking_key=key)
    place = Window(
        RowNumber(),
        partition_by=[F("target_name"), F("ranking_key")],
        order_by=[F("speedup").desc(), F("pk")],
    )
    found = draft_rows(
        competing_drafts()
        .filter(wanted)
        .annotate(place=place)
        .filter(place__lte=GLANCE_ROWS)
        .order_by("target_name", "ranking_key", "-speedup", "pk")
    )
    rows: dict[tuple[str, str], list[DraftRow]] = {}
    for row in found:
        rows.setdefault((row.target_name, row.ranking_key), []).append(row)
    return rows
