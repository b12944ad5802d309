"""Which draft for a target: per ranking (one GPU kind, workload, tok/s definition and engine
release), every way the target has been drafted (a speculative type and its draft file, if any)
by its best speedup, as the verdicts decide it (`leaderboard.verdicts.advice.draft_tables`).

Every workload the target was measured on has its own table, headed by what it measured: a
prompt decides much of a speedup (a repetitive one lets n-gram drafting accept nearly
everything), so a figure is never set against one from another workload. Only competing rows
with a speedup over a paired baseline count (`verdicts.ranking.competes`).
"""

from __future__ import annotations

from leaderboard import verdicts
from leaderboard.models import RankingSummary
from leaderboard.selectors.board import competing_drafts
from leaderboard.selectors.cache import ranking_kept
from leaderboard.selectors.draft_rows import draft_rows


def draft_advice(*, target_name: str) -> list[verdicts.DraftTable]:
    """Per ranking, the target's drafts fastest first (`verdicts.DraftTable`: hardware,
    definition, workload, engine release, ranking label, drafts with their standing, none_pays).

    Kept until one of the rankings that hold the target's drafts (their summaries say which)
    changes, or a change names no ranking (`ranking_kept`): a run recorded elsewhere leaves a
    target's advice as it was."""
    rankings = list(
        RankingSummary.objects.filter(target_name=target_name, drafts__gt=0).values_list(
            "ranking_key", flat=True
        )
    )
    if not rankings:
        # No ranking holds a draft of it (an unknown name among them): nothing to advise, and
        # nothing kept, so names made up by a client cannot fill the cache.
        return []
    [advice] = ranking_kept(
        "draft-advice",
        [target_name],
        lambda _: rankings,
        lambda todo: [_draft_advice(target_name=target) for target in todo],
    )
    return advice


def _draft_advice(*, target_name: str) -> list[verdicts.DraftTable]:
    # Every competing draft of the target, read as values (`draft_rows`): the verdicts read a
    # few columns of each, and the page and the API those of each table's standings.
    rows = draft_rows(
        competing_drafts(target_name=target_name).order_by(
            "hardware__gpu_name", "ranking_key", "-speedup", "pk"
        )
    )
    return verdicts.draft_tables(rows)
