"""Evidence before a verdict: whether a speedup, acceptance or tau rests on enough drafting to
say anything, decided once for every page.

A speculative figure is **anecdotal** when its batch drafted fewer than `MIN_DRAFTED_TOKENS`
tokens or made fewer than `MIN_VERIFY_STEPS` verify steps (where the engine counted them): "1.20x,
acceptance 100%, tau 7.00" from 1 verify step of 6 drafted tokens is one lucky step, not a
measurement of the draft. Such a row is shown with its counts ("anecdotal: 1 verify step, 6
drafted tokens; 20 of each are needed") and no answer crowns it: not the best for a GPU, not
the fastest draft, not the best n_max, not a category's colour. Its tok/s is still a
measurement and keeps its rank. A baseline drafts nothing and is never anecdotal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leaderboard.verdicts.statistics import count

# The fewest verify steps, and the fewest drafted tokens, a speculative figure may rest on.
MIN_VERIFY_STEPS = 20
MIN_DRAFTED_TOKENS = 20
THRESHOLD_TEXT = (
    f"a speedup, acceptance or tau from fewer than {MIN_VERIFY_STEPS} verify steps or "
    f"{MIN_DRAFTED_TOKENS} drafted tokens is an anecdote, never an answer"
)


def _plural(number: int, word: str) -> str:
    return f"{number:,} {word}{'' if number == 1 else 's'}"


@dataclass(frozen=True)
class Evidence:
    """What a speculative figure rests on: the drafted tokens and verify steps counted (None:
    the engine did not count steps, as in the seed kit's CSV)."""

    drafted: int
    verify_steps: int | None

    @property
    def anecdotal(self) -> bool:
        if self.drafted < MIN_DRAFTED_TOKENS:
            return True
        return self.verify_steps is not None and self.verify_steps < MIN_VERIFY_STEPS

    def text(self) -> str:
        """ "1 verify step, 6 drafted tokens" (or only the tokens where steps were not counted)."""
        tokens = _plural(self.drafted, "drafted token")
        if self.verify_steps is None:
            return tokens
        return f"{_plural(self.verify_steps, 'verify step')}, {tokens}"

    def note(self) -> str:
        """ "anecdotal: from 1 verify step, 6 drafted tokens" where anecdotal; else empty."""
        return f"anecdotal: from {self.text()}" if self.anecdotal else ""


def evidence_of(*, drafted: object, verify_steps: object, tau: object = None) -> Evidence:
    """A batch's evidence from its stored counts. Verify steps count only where the engine
    counted them (some steps, or a tau that needs them); 0 steps with no tau reads as not
    counted."""
    steps = count(verify_steps) or 0
    counted = steps > 0 or tau is not None
    return Evidence(drafted=count(drafted) or 0, verify_steps=steps if counted else None)


def anecdotal(*, speculative: bool, drafted: object, verify_steps: object, tau: object) -> bool:
    """Whether a row's speculative figures are anecdotal (never for a baseline)."""
    if not speculative:
        return False
    return evidence_of(drafted=drafted, verify_steps=verify_steps, tau=tau).anecdotal


def row_note(row: Any) -> str:
    """A stored row's note (its `anecdotal` flag and best batch's `draft_tokens`,
    `verify_steps` and `tau`), as every row type shows it: "anecdotal: from 1 verify step, 6
    drafted tokens" where anecdotal, else empty."""
    if not row.anecdotal:
        return ""
    return evidence_of(drafted=row.draft_tokens, verify_steps=row.verify_steps, tau=row.tau).note()
