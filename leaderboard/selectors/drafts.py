"""Which draft for a target: on each GPU kind and workload, every way the target has been drafted
(a speculative type and its draft file, if any) by its best speedup, with ties to the fastest.

Only rows of the main ranking count (`selectors.board.RANKED`, outside the concurrency and
categories protocols, whose speedups pool other kinds of requests), and only rows with a speedup
over a paired baseline. Speedups are compared within one hardware kind, one tok/s definition and
one workload (the protocol with its parameters: a quick protocol's prompt, a sweep's depths; not
how many runs it took) alone: a speedup is a ratio of two means of one definition measured on one GPU, and what the
prompt is decides much of it (a repetitive one lets n-gram drafting accept nearly everything). A
draft is marked tied with the fastest where their speedup intervals overlap
(`selectors.intervals.overlaps`, the board's rule for ties: overlap does not prove the two equal,
only that this evidence does not order them); a depth row's speedup is a geometric mean over depths and a
one-request batch has no spread: without an interval a tie is unknown, and the page says so.
"""

from __future__ import annotations

from leaderboard.models import Config, LeaderboardEntry
from leaderboard.selectors.board import RANKED
from leaderboard.selectors.board_charts import entry_speedup_interval
from leaderboard.selectors.definitions import canonical_protocol, protocol_summary
from leaderboard.selectors.intervals import overlaps
from leaderboard.selectors.protocols import SEPARATE_PROTOCOLS

PROMPT_PREVIEW = 40


def draft_advice(*, target_name: str) -> list[dict]:
    """Per hardware kind, tok/s definition and workload, the target's drafts fastest first.

    [{"hardware", "definition", "definition_label", "workload" (the protocol in words), "drafts":
    [{"spec_label", "draft" (the draft file's name, "" without one), "entry" (its fastest row),
    "interval" (that speedup's 95% interval or None), "configs" (configs of this draft),
    "leader", "tied", "tie_unknown" (a side has no interval), "against_baseline" ("faster",
    "slower", "unclear", "below 1, no interval" or None)}], "none_pays" (every draft's speedup is
    below 1)}], by GPU name, definition and workload.
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
    groups: dict[tuple[int, str, str], dict] = {}
    for entry in rows:
        workload, label = _workload(entry.config)
        group = groups.setdefault(
            (entry.hardware_id, entry.tps_definition, workload),
            {
                "hardware": entry.hardware,
                "definition": entry.tps_definition,
                "definition_label": entry.get_tps_definition_display(),
                "workload": label,
                "by_draft": {},
            },
        )
        draft = entry.config.draft.name if entry.config.draft else ""
        # Rows come fastest first, so each draft's first row is its best.
        group["by_draft"].setdefault((entry.config.spec_label, draft), []).append(entry)
    ranked = [_ranked(group) for group in groups.values()]
    return sorted(ranked, key=lambda g: (g["hardware"].gpu_name, g["definition"], g["workload"]))


def _workload(config: Config) -> tuple[str, str]:
    """What was measured (the grouping key: the protocol and its parameters, how often it
    measured left out, `Config.workload`) and in words (the heading)."""
    label = protocol_summary(config)
    prompt = canonical_protocol(config).get("prompt")
    if isinstance(prompt, str) and prompt:
        cut = prompt[:PROMPT_PREVIEW].replace("\n", " ")
        label += f" · prompt “{cut}{'…' if len(prompt) > PROMPT_PREVIEW else ''}”"
    return config.workload, label


def _ranked(group: dict) -> dict:
    drafts = [
        {
            "spec_label": spec_label,
            "draft": draft,
            "entry": entries[0],
            "interval": entry_speedup_interval(entries[0]),
            "configs": len({entry.config_id for entry in entries}),
        }
        for (spec_label, draft), entries in group.pop("by_draft").items()
    ]
    drafts.sort(key=lambda d: (-d["entry"].speedup, d["spec_label"], d["draft"]))
    leader = drafts[0]["interval"]
    for index, draft in enumerate(drafts):
        own = draft["interval"]
        draft["leader"] = index == 0
        draft["tie_unknown"] = index > 0 and (leader is None or own is None)
        draft["tied"] = index > 0 and overlaps(*(own or (None, None)), *(leader or (None, None)))
        draft["against_baseline"] = _against_baseline(own, draft["entry"].speedup)
    # The fastest draft may still lose to decoding without one: say so rather than crown it.
    none_pays = all(d["against_baseline"] in ("slower", "below 1, no interval") for d in drafts)
    return group | {"drafts": drafts, "none_pays": none_pays}


def _against_baseline(interval: tuple[float, float] | None, speedup: float) -> str | None:
    """ "faster" or "slower" where the whole speedup interval lies above or below 1, "unclear"
    where it holds 1; without an interval, "below 1, no interval" for a speedup below 1."""
    if interval is None:
        return "below 1, no interval" if speedup < 1 else None
    low, high = interval
    return "faster" if low > 1 else "slower" if high < 1 else "unclear"
