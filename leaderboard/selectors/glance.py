"""The front page's answer at a glance: per GPU kind and target, the fastest draft as the verdicts
decide it (`verdicts.draft_tables`), in the ranking that measured the most of that target's
configs on that GPU.

Which pairs have an answer and their rankings are counted once per change of the board's row
set; each shown pair's table is kept until its ranking changes (`RankingVersion`), and only the
pairs whose ranking changed are read again (one query for all of them)."""

from __future__ import annotations

from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber

from leaderboard import verdicts
from leaderboard.models import RankingSummary
from leaderboard.selectors.board import competing_drafts
from leaderboard.selectors.cache import board_cached, ranking_kept
from leaderboard.selectors.draft_rows import DraftRow, draft_rows

# The front page's answers at most: one line per GPU kind and target.
GLANCE_LIMIT = 12
# The fastest rows by speedup a glance answer is decided from, per GPU kind and target.
GLANCE_ROWS = 500


def fastest_drafts() -> list[dict]:
    """Per GPU kind and target with ranked speedups, the fastest draft as the verdicts decide it
    (`verdicts.draft_tables`), in the ranking that measured the most of that target's configs on
    that GPU (one workload, tok/s definition and release), for the front page: up to
    `GLANCE_LIMIT` of {"hardware", "target", "table" (its `verdicts.DraftTable`), "leader" (the
    table's first `DraftStanding`), "tied" (how many drafts the verdicts cannot tell from it),
    "rankings" (how many rankings the pair has), "more" (how many pairs were left out, on the
    first only)}.

    The pairs come from the row set's cache. Each shown pair's table is kept until its ranking
    changes (`ranking_kept`): a run recorded in another ranking, or in one the page shows below,
    reads none of the glance's rows."""
    pairs = board_cached("glance-pairs", {}, _glance_pairs, row_set_only=True)
    shown = pairs[:GLANCE_LIMIT]
    if not shown:
        return []
    tables = ranking_kept(
        "glance-tables",
        shown,
        lambda pair: [pair[4]],
        lambda todo: [verdicts.draft_tables(group) for group in _glance_rows(todo)],
    )
    answers = [
        {
            "hardware": table.hardware,
            "target": target,
            "table": table,
            "leader": table.drafts[0],
            "tied": sum(draft.tied for draft in table.drafts),
            "rankings": rankings,
        }
        for (_, _, target, _, _, rankings), found_tables in zip(shown, tables, strict=True)
        for table in found_tables
        # A table of anecdotes has no leader (`verdicts.evidence`): nothing to crown there.
        if table.drafts[0].leader
    ]
    answers.sort(key=lambda a: (a["hardware"].gpu_name, a["hardware"].slug, a["target"]))
    if answers:
        answers[0]["more"] = len(pairs) - len(shown)
    return answers


def _glance_pairs() -> list[tuple[str, str, str, int, str, int]]:
    """Every GPU kind and target with ranked speedups, in the front page's order: (GPU name, its
    slug, target, hardware id, the ranking that measured the most of that target's configs on
    that GPU, how many rankings the pair has). Read from the rankings' summaries (kept when a
    ranking changes) and cached on the board's row set."""
    counts = RankingSummary.objects.filter(drafts__gt=0).values_list(
        "hardware_id",
        "hardware__gpu_name",
        "hardware__slug",
        "target_name",
        "ranking_key",
        "ranking_label",
        "drafts",
    )
    chosen: dict[tuple[int, str], tuple[int, str, str]] = {}
    rankings: dict[tuple[int, str], int] = {}
    names: dict[int, tuple[str, str]] = {}
    for hardware_id, gpu_name, slug, target, key, label, drafts in counts:
        pair = (hardware_id, target)
        names[hardware_id] = (gpu_name, slug)
        rankings[pair] = rankings.get(pair, 0) + 1
        candidate = (drafts, label, key)
        chosen[pair] = max(chosen.get(pair, candidate), candidate)
    return sorted(
        (*names[hardware_id], target, hardware_id, key, rankings[(hardware_id, target)])
        for (hardware_id, target), (_, _, key) in chosen.items()
    )


def _glance_rows(pairs: list[tuple]) -> list[list[DraftRow]]:
    """Each pair's fastest rows by speedup (they hold each draft's best, which the verdicts pick
    among), read as values (`draft_rows`): one query for every pair, an index range of
    `entry_target_speedup` each."""
    wanted = Q()
    for _, _, target, _, key, _ in pairs:
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
    return [rows.get((target, key), []) for _, _, target, _, key, _ in pairs]
