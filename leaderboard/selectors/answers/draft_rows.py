"""The rows the draft answers are decided from (the front page's glance, the model page's advice
and /api/v1/drafts), read as plain values.

`verdicts.draft_tables` picks, per ranking, each way of drafting's best row among up to
hundreds: read as models, each row came with its config, its draft file and its hardware kind,
four instances a row (at 10M runs a glance pair's 500 rows were a quarter of a front-page miss).
Here a row is one small frozen object with what the verdicts, the glance, the model page and the
API read of it, and every row of a GPU kind shares that kind's one `Hardware`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from django.db.models import QuerySet

from leaderboard import verdicts
from leaderboard.models import Hardware, LeaderboardEntry, Run


@dataclass(frozen=True, slots=True)
class DraftFile:
    """A draft file, by name."""

    name: str


@dataclass(frozen=True, slots=True)
class DraftConfig:
    """What the answers show of a row's config."""

    key: str
    label: str
    spec_label: str
    protocol: str
    n_max: int | None
    draft_id: int | None
    draft: DraftFile | None

    @property
    def is_speculative(self) -> bool:
        return self.spec_label != "none"


@dataclass(frozen=True, slots=True)
class DraftRow:
    """A competing speculative row as the draft answers read it."""

    pk: int
    config_id: int
    target_name: str
    ranking_key: str
    ranking_label: str
    workload_label: str
    tps_definition: str
    engine_release: str
    rank: int | None
    noisy: bool
    baseline_noisy: bool
    speedup: float | None
    speedup_ci95_low: float | None
    speedup_ci95_high: float | None
    speedup_basis: str
    tokens_per_second: float
    acceptance_rate: float | None
    tau: float | None
    memorised: bool
    prompts_unknown: bool
    anecdotal: bool
    draft_tokens: int
    verify_steps: int
    config: DraftConfig
    hardware: Hardware

    # The row's own columns, in its fields' order; then its config's (DraftConfig's order but
    # the draft, whose name follows) and its hardware kind's id.
    OWN: ClassVar[tuple[str, ...]] = (
        "pk", "config_id", "target_name", "ranking_key", "ranking_label", "workload_label",
        "tps_definition", "engine_release", "rank", "noisy", "baseline_noisy", "speedup", "speedup_ci95_low",
        "speedup_ci95_high", "speedup_basis", "tokens_per_second", "acceptance_rate", "tau",
        "memorised", "prompts_unknown", "anecdotal", "draft_tokens", "verify_steps",
    )  # fmt: skip
    CONFIG: ClassVar[tuple[str, ...]] = (
        "config__key", "config__label", "config__spec_label", "config__protocol",
        "config__n_max", "config__draft_id", "config__draft__name",
    )  # fmt: skip
    COLUMNS: ClassVar[tuple[str, ...]] = (*OWN, *CONFIG, "hardware_id")

    @property
    def hardware_id(self) -> int:
        return self.hardware.pk

    @property
    def evidence_note(self) -> str:
        """ "anecdotal: from 1 verify step, 6 drafted tokens" where anecdotal
        (`verdicts.evidence`)."""
        return verdicts.row_note(self)

    def get_tps_definition_display(self) -> str:
        """The tok/s definition in words, as the model's choices say it."""
        try:
            return Run.Definition(self.tps_definition).label
        except ValueError:
            return self.tps_definition


def draft_rows(entries: QuerySet[LeaderboardEntry]) -> list[DraftRow]:
    """These rows (ordered, filtered, sliced as the caller chose) as `DraftRow`s: one query for
    the rows, one for the hardware kinds among them."""
    rows = list(entries.values_list(*DraftRow.COLUMNS))
    kinds = Hardware.objects.in_bulk({values[-1] for values in rows})
    own, config = len(DraftRow.OWN), len(DraftRow.CONFIG)
    return [_row(values, own, config, kinds) for values in rows]


def _row(values: Sequence, own: int, config: int, kinds: dict[int, Hardware]) -> DraftRow:
    key, label, spec_label, protocol, n_max, draft_id, draft_name = values[own : own + config]
    return DraftRow(
        **dict(zip(DraftRow.OWN, values[:own], strict=True)),
        config=DraftConfig(
            key=key,
            label=label,
            spec_label=spec_label,
            protocol=protocol,
            n_max=n_max,
            draft_id=draft_id,
            draft=DraftFile(draft_name) if draft_id else None,
        ),
        hardware=kinds[values[-1]],
    )
