"""The front page's answer at a glance: per GPU kind and target, the fastest draft as the verdicts
decide it (`verdicts.draft_tables`), in the ranking that measured the most of that target's
configs on that GPU.

Which pairs have an answer and their rankings are counted once per change of the board's row
set; each shown pair's table is kept until its ranking changes (`RankingVersion`), and only the
pairs whose ranking changed are read again (one query for all of them)."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.cache import cache
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber

from leaderboard import board_version, verdicts
from leaderboard.models import LeaderboardEntry, RankingSummary
from leaderboard.selectors.board import competing_drafts
from leaderboard.selectors.cache import board_cached

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
    first only)}."""
    return _fastest_drafts()


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


def _fastest_drafts() -> list[dict]:
    # The pairs come from the row set's cache. Each shown pair's table is kept under its
    # ranking's version (and that of changes naming no ranking): a run recorded in another
    # ranking, or in one the page shows below, reads none of the glance's rows. The versions are
    # read before the rows, so rows newer than a version can be kept under it, never older ones.
    pairs = board_cached("glance-pairs", {}, _glance_pairs, row_set_only=True)
    shown = pairs[:GLANCE_LIMIT]
    if not shown:
        return []
    ranking_keys = [key for _, _, _, _, key, _ in shown]
    # What the page around the glance depends on, whether or not its rows are read here.
    board_version.note_rankings(ranking_keys)
    versions = board_version.ranking_versions(ranking_keys)
    keys = [
        _table_key(target, key, versions[key], versions[board_version.ANY_RANKING])
        for _, _, target, _, key, _ in shown
    ]
    kept = cache.get_many(keys)
    todo = [index for index, key in enumerate(keys) if key not in kept]
    if todo:
        groups = _glance_rows([shown[index] for index in todo])
        fresh = {
            keys[index]: verdicts.draft_tables(group)
            for index, group in zip(todo, groups, strict=True)
        }
        cache.set_many(fresh, settings.SPECBOARD_BOARD_CACHE_SECONDS)
        kept |= fresh
    tables = [kept[cache_key] for cache_key in keys]
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
    ]
    answers.sort(key=lambda a: (a["hardware"].gpu_name, a["hardware"].slug, a["target"]))
    if answers:
        answers[0]["more"] = len(pairs) - len(shown)
    return answers


def _table_key(target: str, ranking: str, version: int, any_version: int) -> str:
    """Where a pair's glance table is kept: its target and ranking at their versions."""
    digest = hashlib.blake2b(f"{target}\x00{ranking}".encode(), digest_size=16).hexdigest()
    return f"glance-table:{digest}:{version}:{any_version}"


def _glance_rows(pairs: list[tuple]) -> list[list[LeaderboardEntry]]:
    """Each pair's fastest rows by speedup (they hold each draft's best, which the verdicts pick
    among): one query for every pair, an index range of `entry_target_speedup` each."""
    wanted = Q()
    for _, _, target, _, key, _ in pairs:
        wanted |= Q(target_name=target, ranking_key=key)
    place = Window(
        RowNumber(),
        partition_by=[F("target_name"), F("ranking_key")],
        order_by=[F("speedup").desc(), F("pk")],
    )
    found = (
        competing_drafts()
        .filter(wanted)
        .select_related("config", "config__draft", "hardware")
        .annotate(place=place)
        .filter(place__lte=GLANCE_ROWS)
        .order_by("target_name", "ranking_key", "-speedup", "pk")
    )
    rows: dict[tuple[str, str], list[LeaderboardEntry]] = {}
    for entry in found:
        rows.setdefault((entry.target_name, entry.ranking_key), []).append(entry)
    return [rows.get((target, key), []) for _, _, target, _, key, _ in pairs]
