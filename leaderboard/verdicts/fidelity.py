"""Whether a row's or a run's greedy output is the baseline's: ``lossless`` and the fidelity
badge, decided together so that they never disagree.

Both are derived from outputs, never from a claim in a file: ``lossless`` is the site's own
comparison of the two sides' output hashes on the same prompts (``services.results``), and the
door refuses a result whose divergence records contradict its output hashes or, under the
quality protocol, its answers (``runner.evidence.identity_problem``), so a grade's "identical"
means the same tokens. The grade's "near ties only" holds only where every divergence is a near
tie by the margin rule (``runner.evidence.margin_problem``) and the threshold was measured on the
engine backend that produced the run (``runner.fidelity.NEAR_TIE_MEASURED_BACKENDS``); on another
backend such a flip is unclassified, shown as "diverged (unclassified)", not as a green badge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from runner.fidelity import NEAR_TIE_MEASURED_BACKENDS

IDENTICAL = "identical"
NEAR_TIES_ONLY = "near ties only"
UNCLASSIFIED = "unclassified"
MISMATCH = "mismatch"
# runner.fidelity's verdicts, best first: a row shows the worst of its graded batches.
FIDELITY_ORDER = (IDENTICAL, NEAR_TIES_ONLY, UNCLASSIFIED, MISMATCH)


def graded_fidelity(verdict: str, *, backend: str) -> str:
    """A run's grade as the site reads it: "near ties only" stands only on a backend whose
    margin noise floor was measured; elsewhere its flips are unclassified."""
    if verdict == NEAR_TIES_ONLY and backend not in NEAR_TIE_MEASURED_BACKENDS:
        return UNCLASSIFIED
    return verdict


@dataclass(frozen=True)
class Outputs:
    """What a row (or one run) says of its output: lossless, and its fidelity verdict."""

    lossless: bool | None
    fidelity: str


class GradedRun(Protocol):
    """What the verdict reads of a run (a `leaderboard.models.Run`); ``synthetic`` is optional."""

    @property
    def lossless(self) -> bool | None: ...

    @property
    def fidelity(self) -> str: ...


def _lossless(real: Sequence[GradedRun], graded: Sequence[str]) -> bool | None:
    """Whether every compared batch matched; None when none was compared."""
    compared = [run.lossless for run in real if run.lossless is not None]
    # A grade compared the outputs too (the door checked it against the output hashes).
    compared += [verdict == IDENTICAL for verdict in graded]
    return all(compared) if compared else None


def outputs_verdict(runs: Sequence[GradedRun]) -> Outputs:
    """Lossless and the fidelity verdict of a row's batches (runs with ``lossless``,
    ``fidelity`` and ``synthetic``), in agreement.

    Lossless is False if any compared batch diverged (a graded batch compared its outputs too),
    True only when every compared batch matched, None when none was compared (synthetic
    acceptance claims nothing). The verdict is the worst graded batch's; "identical" only where
    lossless is True: beside a batch that diverged without a grade it is "unclassified".
    """
    real = [run for run in runs if not getattr(run, "synthetic", False)]
    graded = [run.fidelity for run in real if run.fidelity in FIDELITY_ORDER]
    lossless = _lossless(real, graded)
    fidelity = max(graded, key=FIDELITY_ORDER.index) if graded else ""
    if fidelity == IDENTICAL and lossless is not True:
        fidelity = UNCLASSIFIED
    return Outputs(lossless=lossless, fidelity=fidelity)
