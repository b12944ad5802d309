"""Small formatting filters for numbers the pages show."""

from django import template

register = template.Library()


@register.filter
def percent(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value * 100:.{digits}f}%"


@register.filter
def number(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


@register.filter
def interval(low: float | None, high: float | None) -> str:
    """A 95% interval of a speed; its low end is shown no lower than zero."""
    if low is None or high is None:
        return "–"
    return f"{max(low, 0.0):,.1f} – {high:,.1f}"


@register.filter
def times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


@register.filter
def gib(value: int | None) -> str:
    return "–" if not value else f"{value / 2**30:.1f} GiB"


@register.filter
def as_json(value: object) -> str:
    import json

    return json.dumps(value, indent=2, sort_keys=True)


@register.filter
def signed(value: float | None, digits: int = 1) -> str:
    """A difference with its sign, so '+3.2' and '−1.0' read as gains and losses."""
    return "–" if value is None else f"{value:+,.{digits}f}".replace("-", "−")
