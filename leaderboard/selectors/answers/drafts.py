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
from leaderboard.selectors.answers.draft_rows import draft_rows
from leaderboard.selectors.board.rows import competing_drafts


def draft_advice(*, target_name: str) -> list[verdicts.DraftTable]:
    """Per ranking, the target's drafts fastest first (`verdicts.DraftTable`: hardware,
    definition, workload, engine release, ranking label, drafts with their standing, none_pays)."""
    if not RankingSummary.objects.filter(target_name=target_name, drafts__gt=0).exists():
        # No ranking holds a draft of it (an unknown name among them): nothing to advise.
        return []
    # Every competing draft of the target, read as values (`draft_rows`): the verdicts read a
    # few columns of each, and the page and the API those of each table's standings.
    rows = draft_rows(
        competing_drafts(target_name=target_name).order_by(
            "hardware__gpu_name", "ranking_key", "-speedup", "pk"
        )
    )
    return verdicts.draft_tables(rows)
