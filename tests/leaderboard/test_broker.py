"""What the site asks the broker (leaderboard.messaging.broker): which workers answer and how long
the queues are, an answer or None, never an exception. (A host's broker user is
test_broker_acl.py.)"""

from __future__ import annotations

import uuid

from leaderboard.messaging import broker


def test_the_broker_is_asked_which_workers_answer_and_how_long_the_queues_are():
    # The site's broker (a local Redis when one answers, else the filesystem transport): it
    # answers the workers it has or None when unreachable, never an exception. The queue is one
    # of this test's own, empty whatever other test runs left on a shared Redis.
    workers = broker.live_workers(timeout_s=0.3)
    assert workers is None or all(isinstance(q, list) for q in workers.values())
    queue = f"gpu.test-{uuid.uuid4().hex}"
    lengths = broker.queue_lengths([queue])
    assert lengths is None or lengths == {queue: 0}
