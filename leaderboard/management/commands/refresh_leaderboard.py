"""Recompute every leaderboard row and its ranking from the stored runs, after an upgrade that
changed a verdict rule (migration 0015 added the verdict columns empty; 0031 made the prompts a
quick-protocol batch sent part of its ranking, derived here) or moved runs between configs
(0019 split self-reported configs that mixed published and unpublished runs); measured configs'
labels are written again first, so that each names the options it sets."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from leaderboard import services


class Command(BaseCommand):
    help = "Recompute every leaderboard row, its verdicts and every ranking from the stored runs."

    def handle(self, *args, **options) -> None:
        rows = services.refresh_verdicts()
        self.stdout.write(f"recomputed {rows} leaderboard rows and their rankings")
