"""The web process's collector (leaderboard.collector): what it loaded is frozen when the app is
served and again after its first requests."""

from __future__ import annotations

import gc

from django.core.signals import request_finished

from leaderboard import collector


def test_what_a_served_process_holds_is_frozen_then_and_after_its_first_request(client, db):
    gc.unfreeze()
    try:
        collector.freeze_when_served()
        loaded = gc.get_freeze_count()
        assert loaded > 0
        kept = [[index] for index in range(1_000)]  # long-lived objects made by a request
        client.get("/api/v1/")
        assert gc.get_freeze_count() >= loaded + len(kept)
    finally:
        request_finished.disconnect(dispatch_uid="collector-freeze")
        collector._served = 0
        gc.unfreeze()
