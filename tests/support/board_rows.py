"""Leaderboard rows made directly, for tests of how the board reads and ranks stored rows: each
row is stored with the verdict columns `services.board` fills when a run is recorded (its
ranking's key and label, the config's sample over its batch's requests), and its ranking is
ranked again by the service's own `rerank`, so a page reads ranks and ties as it would in use."""

from __future__ import annotations

import itertools
import math

from leaderboard import verdicts
from leaderboard.models import Config, Hardware, LeaderboardEntry
from leaderboard.services.board import rerank
from leaderboard.services.configs import protocol_variant
from leaderboard.verdicts.statistics import t_critical

_keys = itertools.count(1)
CONFIG_FIELDS = ("spec_label", "protocol", "n_max", "canonical", "baseline", "target_name")
# The headings of the rankings quick rows fall under on a kind named "GPU A", by tok/s definition.
QUICK_DECODE = "quick · decode tok/s · GPU A · b11434"
QUICK_END_TO_END = "quick · end-to-end tok/s · GPU A · b11434"


def board_row(hardware: Hardware, label: str, tps: float, **fields) -> LeaderboardEntry:
    """A row of its own config: tps with a 95% interval of tps ± `half` over `n` requests (one
    batch, so the config's sample is its requests; none below two), ranked in its ranking."""
    half, n = fields.pop("half", 2.0), fields.pop("n", 5)
    config_fields = {name: fields.pop(name) for name in CONFIG_FIELDS if name in fields}
    config = Config.objects.create(
        **{
            "key": f"{next(_keys):016x}",
            "canonical": {"label": label},
            "label": label,
            "target_name": "target",
            "spec_label": "draft-simple",
            "protocol": "quick",
        }
        | config_fields
    )
    # What the service derives from the canonical protocol: configs alike in it share a workload.
    config.protocol_variant = protocol_variant(verdicts.canonical_protocol(config) or None)
    config.save(update_fields=["protocol_variant"])
    definition = fields.get("tps_definition", "decode")
    release = fields.get("engine_release", "b11434")
    # The standard deviation that gives the interval's half width (Student t, n - 1 df).
    stdev = half * math.sqrt(n) / t_critical(n - 1) if n > 1 else None
    entry = LeaderboardEntry.objects.create(
        **{
            "config": config,
            "target_name": config.target_name,
            "spec_label": config.spec_label,
            "n_max": config.n_max,
            "hardware": hardware,
            "engine_release": release,
            "tps_definition": definition,
            "tokens_per_second": tps,
            "n": n,
            "stdev": stdev,
            "ci95_low": tps - half if n > 1 else None,
            "ci95_high": tps + half if n > 1 else None,
            "runs_count": 1,
            "ranking_key": verdicts.ranking_key(
                config, definition=definition, hardware_id=hardware.pk, engine_release=release
            ),
            "ranking_label": verdicts.ranking_label(
                config, definition=definition, gpu_name=hardware.gpu_name, engine_release=release
            ),
            "workload_label": verdicts.workload_label(config),
            "config_mean": tps,
            "config_stdev": stdev,
            "config_n": n,
            "config_ci95_low": tps - half if n > 1 else None,
            "config_ci95_high": tps + half if n > 1 else None,
            "interval_basis": verdicts.REQUESTS,
        }
        | fields
    )
    rerank(ranking_key=entry.ranking_key)
    entry.refresh_from_db()
    return entry
