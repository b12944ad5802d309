"""Which draft for a target: on each GPU kind, every way the target has been drafted (a
speculative type and its draft file, if any) by its best speedup, with ties to the fastest.

Only rows of the main ranking count (`selectors.board.RANKED`, outside the concurrency and
categories protocols, whose speedups pool other kinds of requests), and only rows with a speedup
over a paired baseline. Speedups are compared within one hardware kind and one tok/s definition
alone: a speedup is a ratio of two means of one definition measured on one GPU. A draft is tied
with the fastest where their speedup intervals overlap (`selectors.intervals.overlaps`); a depth
row's speedup is a geometric mean over depths, has no interval, and ties with nothing.
"""

from __future__ import annotations

from leaderboard.models import LeaderboardEntry
from leaderboard.selectors.board import RANKED
from leaderboard.selectors.board_charts import entry_speedup_interval
from leaderboard.selectors.intervals import overlaps
from leaderboard.selectors.protocols import SEPARATE_PROTOCOLS


def draft_advice(*, target_name: str) -> list[dict]:
    """Per hardware kind and tok/s definition, the target's drafts fastest first.

    [{"hardware", "definition", "definition_label", "drafts": [{"spec_label", "draft" (the draft
    file's name, "" without one), "entry" (its fastest row), "interval" (that speedup's 95%
    interval or None), "configs" (rows of this draft), "leader", "tied", "against_baseline"
    ("faster", "slower", "unclear" or None: where the interval lies against 1)}], "none_pays"
    (every draft is clearly slower than its baseline)}], GPUs by name.
    """
    rows = (
        LeaderboardEntry.objects.filter(
            RANKED, speedup__isnull=False, config__target_name=target_name
        )
        .exclude(config__spec_label="none")
        .exclude(config__protocol__in=SEPARATE_PROTOCOLS)
        .select_related("config", "config__draft", "hardware", "baseline_entry", "baseline_run")
        .order_by("hardware__gpu_name", "hardware__pk", "tps_definition", "-speedup", "pk")
    )
    groups: dict[tuple[int, str], dict] = {}
    for entry in rows:
        group = groups.setdefault(
            (entry.hardware_id, entry.tps_definition),
            {
                "hardware": entry.hardware,
                "definition": entry.tps_definition,
                "definition_label": entry.get_tps_definition_display(),
                "by_draft": {},
            },
        )
        draft = entry.config.draft.name if entry.config.draft else ""
        # Rows come fastest first, so each draft's first row is its best.
        group["by_draft"].setdefault((entry.config.spec_label, draft), []).append(entry)
    return [_ranked(group) for group in groups.values()]


def _ranked(group: dict) -> dict:
    drafts = [
        {
            "spec_label": spec_label,
            "draft": draft,
            "entry": entries[0],
            "interval": entry_speedup_interval(entries[0]),
            "configs": len(entries),
        }
        for (spec_label, draft), entries in group.pop("by_draft").items()
    ]
    drafts.sort(key=lambda d: (-d["entry"].speedup, d["spec_label"], d["draft"]))
    leader = drafts[0]["interval"] or (None, None)
    for index, draft in enumerate(drafts):
        draft["leader"] = index == 0
        draft["tied"] = index > 0 and overlaps(*(draft["interval"] or (None, None)), *leader)
        draft["against_baseline"] = _against_baseline(draft["interval"])
    # The fastest draft may still lose to decoding without one: say so rather than crown it.
    none_pays = all(d["against_baseline"] == "slower" for d in drafts)
    return group | {"drafts": drafts, "none_pays": none_pays}


def _against_baseline(interval: tuple[float, float] | None) -> str | None:
    """ "faster" or "slower" where the whole speedup interval lies above or below 1, "unclear"
    where it holds 1, None without an interval."""
    if interval is None:
        return None
    low, high = interval
    return "faster" if low > 1 else "slower" if high < 1 else "unclear"
