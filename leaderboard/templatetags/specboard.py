"""Small formatting filters for the finished values the pages show; they call nothing."""

import json
from collections.abc import Iterable
from functools import lru_cache

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from leaderboard.verdicts.evidence import THRESHOLD_TEXT
from leaderboard.verdicts.statistics import finite
from leaderboard.verdicts.workloads import SEED_CSV_PROTOCOL, SEED_CSV_PROTOCOL_LABEL

register = template.Library()


@register.filter
def percent(value: float | None, digits: int = 1) -> str:
    value = finite(value)
    return "–" if value is None else f"{value * 100:.{digits}f}%"


@register.filter
def number(value: float | None, digits: int = 1) -> str:
    value = finite(value)
    return "–" if value is None else f"{value:,.{digits}f}"


@register.filter
def interval(low: float | None, high: float | None) -> str:
    """A 95% interval of a speed; its low end is shown no lower than zero, and one that reached
    below zero says so. A missing one (fewer than two requests, or a mean without its requests)
    says so, never a zero-width [x, x]."""
    low, high = finite(low), finite(high)
    if low is None or high is None:
        return "no interval"
    if low < 0:
        # A speed is never negative: a t-interval reaching below zero (two or three requests
        # far apart) says the batch cannot place its mean, which the clamp alone would hide.
        return f"0.0 – {high:,.1f} (too few requests to place the mean)"
    return f"{low:,.1f} – {high:,.1f}"


@register.simple_tag
def evidence_threshold() -> str:
    """The one evidence threshold, in words (`verdicts.evidence`): the same on every page."""
    return THRESHOLD_TEXT


@register.filter
def times(value: float | None) -> str:
    value = finite(value)
    return "–" if value is None else f"{value:.2f}×"


@register.filter
def gib(value: int | None) -> str:
    return "–" if not value else f"{value / 2**30:.1f} GiB"


@register.filter
def as_json(value: object) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


@register.filter
def signed(value: float | None, digits: int = 1) -> str:
    """A difference with its sign, so '+3.2' and '−1.0' read as gains and losses."""
    return "–" if value is None else f"{value:+,.{digits}f}".replace("-", "−")


# What a protocol value means to a reader; values not listed read as themselves.
PROTOCOL_LABELS = {SEED_CSV_PROTOCOL: SEED_CSV_PROTOCOL_LABEL}


@register.filter
def protocol_label(value: str | None) -> str:
    """A config's protocol as a reader should see it: a seed CSV import says it is unverified."""
    return PROTOCOL_LABELS.get(value or "", value or "–")


@register.simple_tag
def select_options(choices: Iterable[tuple[object, object]], selected: object) -> SafeString:
    """A select's options, (value, text) each, the one whose value is `selected` marked: built
    here, not by a template loop (a page offers hundreds of targets and GPUs), and the options
    of the same choices kept once built (the board's filters offer the same lists to every
    page until its rows change)."""
    html = _options_html(tuple((value, text) for value, text in choices))
    opening = f'<option value="{conditional_escape(str(selected))}">'
    return mark_safe(html.replace(opening, opening[:-1] + " selected>"))


@lru_cache(maxsize=64)
def _options_html(choices: tuple[tuple[object, object], ...]) -> str:
    # conditional_escape takes any object (it escapes its str()); the stubs accept only text.
    return "".join(
        f'<option value="{conditional_escape(value)}">{conditional_escape(text)}</option>'  # type: ignore[arg-type]
        for value, text in choices
    )
