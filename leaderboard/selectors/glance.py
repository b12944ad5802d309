"""The front page's first answer: per GPU kind and target, the fastest draft of every workload
where a draft measured faster than no drafting, or the least slow one where none did, as the
verdicts decide it (`verdicts.answer_workloads`, `verdicts.draft_tables`,
`verdicts.first_answer`).

Which pairs have an answer and their rankings are counted once per change of the board's row
set; each shown pair's answer is kept until one of its rankings changes (`RankingVersion`), and
only the pairs whose rankings changed are decided again: their rankings' leads read from the
summaries (one query), then the rows of the workloads they name (one query)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber

from leaderboard import verdicts
from leaderboard.models import RankingSummary
from leaderboard.selectors.board import competing_drafts
from leaderboard.selectors.cache import board_cached, ranking_kept
from leaderboard.selectors.draft_rows import DraftRow, draft_rows

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


def fastest_drafts() -> Glance:
    """Per GPU kind and target with ranked speedups, the verdicts' first answer (up to
    `GLANCE_LIMIT`, by GPU and target): the draft table of every workload whose leading draft
    measured faster than no drafting, in the verdicts' stable order (up to `GLANCE_WORKLOADS`,
    counting the rest), else the least slow workload's.

    The pairs come from the row set's cache. Each shown pair's answer is kept until one of its
    rankings changes (`ranking_kept`): a run recorded in another ranking reads none of its rows."""
    pairs = board_cached("glance-pairs", {}, _glance_pairs, row_set_only=True)
    shown = pairs[:GLANCE_LIMIT]
    if not shown:
        return Glance(answers=[])
    answers = ranking_kept("glance-answers", shown, lambda pair: pair[4], _answers)
    return Glance(
        answers=[answer for answer in answers if answer is not None],
        pairs_left=len(pairs) - len(shown),
    )


def _glance_pairs() -> list[Pair]:
    """Every GPU kind and target with ranked speedups, in the front page's order (GPU name, slug,
    target), each with its rankings that have them. Read from the rankings' summaries (kept when
    a ranking changes) and cached on the board's row set."""
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


def _answers(pairs: list[Pair]) -> list[verdicts.FirstAnswer | None]:
    """Each pair's first answer: the workloads the verdicts name from its rankings' leads (one
    read of the summaries for every pair), each decided from its fastest rows (one read)."""
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
    named = [
        verdicts.answer_workloads(leads.get((pair[3], pair[2]), []), limit=GLANCE_WORKLOADS)
        for pair in pairs
    ]
    rows = _glance_rows(
        [
            (pair[2], lead.ranking_key)
            for pair, (chosen, _) in zip(pairs, named, strict=True)
            for lead in chosen
        ]
    )
    answers: list[verdicts.FirstAnswer | None] = []
    for pair, (chosen, more) in zip(pairs, named, strict=True):
        tables = [
            table
            for lead in chosen
            for table in verdicts.draft_tables(rows.get((pair[2], lead.ranking_key), []))
        ]
        answers.append(
            verdicts.first_answer(
                # The GPU kind its rows read (`draft_rows`: one instance per kind).
                hardware=tables[0].hardware,
                target=pair[2],
                tables=tables,
                workloads=len(leads.get((pair[3], pair[2]), [])),
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
