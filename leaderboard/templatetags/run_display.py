"""How a run's measured memory reads on the pages.

`peak_memory` says what was measured: GPU memory (NVML) or the engine process's memory (RSS,
on CPU builds), in MiB below 1 GiB, and nothing at all when no memory was measured (0 or
missing); `per_gpu` each GPU's own peak and energy where a run was on several. Both receive
finished values (a row or run's columns, a stored result's GPUs) and call nothing; the
provenance panel's facts and its command are `selectors.evidence.provenance`'s.
"""

from __future__ import annotations

from collections.abc import Mapping

from django import template

from leaderboard.models import Run
from leaderboard.verdicts.statistics import finite

register = template.Library()

MEMORY_KINDS = {"gpu": "GPU memory", "process": "process memory"}


def memory_text(value: object) -> str:
    """Bytes in MiB below 1 GiB, else GiB; "" for 0, a negative or a missing value."""
    value = finite(value)
    if value is None or value <= 0:
        return ""
    if value < 2**30:
        return f"{value / 2**20:,.1f} MiB"
    return f"{value / 2**30:,.1f} GiB"


@register.filter
def peak_memory(run: Run) -> str:
    """A run's peak memory and what it was: "1.2 GiB GPU memory", "312.4 MiB process memory"."""
    amount = memory_text(getattr(run, "peak_memory_bytes", None))
    if not amount:
        return ""
    kind = MEMORY_KINDS.get(getattr(run, "memory_kind", "") or "", "memory of unknown kind")
    return f"{amount} {kind}"


@register.filter
def per_gpu(gpus: list[Mapping[str, object]]) -> list[str]:
    """Each GPU's own peak memory and energy, where the run was measured on several (its stored
    result's `gpus`, `leaderboard.stored_results`): ["GPU 0: 12.0 GiB, 310.5 J", "GPU 1: 10.0
    GiB"]; empty for one GPU. Whatever a GPU's figures hold reads as a figure or nothing."""
    if len(gpus) < 2:
        return []
    lines = []
    for index, gpu in enumerate(gpus):
        joules = finite(gpu.get("energy_joules"))
        parts = [memory_text(gpu.get("peak_memory_bytes")) or "memory not measured"]
        if joules is not None and joules >= 0:
            parts.append(f"{joules:,.1f} J")
        lines.append(f"GPU {index}: {', '.join(parts)}")
    return lines
