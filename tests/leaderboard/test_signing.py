"""Signatures on what GPU hosts send back: one key, one job, one delivery, one sequence number."""

from __future__ import annotations

from leaderboard.messaging import signing

MESSAGE = {"kind": "result", "job_id": 3, "delivery": "a" * 32, "sequence": 17, "body": {"m": 5.0}}


def test_a_signature_holds_only_for_its_key_and_its_exact_message():
    key, other = signing.new_key(), signing.new_key()
    signature = signing.sign(key=key, **MESSAGE)
    assert signing.verify(key=key, **MESSAGE, signature=signature)
    for changed in (
        {"key": other},
        {"kind": "failure"},
        {"job_id": 4},
        {"delivery": "b" * 32},
        {"sequence": 18},
        {"body": {"m": 5000.0}},
    ):
        arguments = {"key": key, **MESSAGE} | changed
        assert not signing.verify(**arguments, signature=signature), changed
    assert not signing.verify(key=key, **MESSAGE, signature="")


def test_a_malformed_signature_or_key_is_simply_not_valid():
    key = signing.new_key()
    for signature in (None, 7, "zz", "0" * 64):
        assert not signing.verify(key=key, **MESSAGE, signature=signature)
    assert not signing.verify(key="not hex", **MESSAGE, signature="0" * 64)


def test_each_delivery_nonce_is_new():
    assert len({signing.new_delivery() for _ in range(100)}) == 100
    assert len(signing.new_delivery()) == 32
