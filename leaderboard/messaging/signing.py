"""Signatures on what a GPU host sends back: HMAC-SHA256 with the host's own key.

A GPU host holds its name and the key an admin issued when registering it
(`manage.py register_gpu_host`); every progress event, result and failure it sends carries the
host's name and a signature over the message kind, the job id, the delivery (the nonce the site
put in the job message it sent), the message's sequence number and the body. The database side
recomputes it with the key it stored for that host, and accepts a delivery's messages only in
increasing sequence: a signed message is good for one job, one delivery and once. Plain Python:
the GPU side has no database.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets

KEY_BYTES = 32


def new_key() -> str:
    """A fresh host key, shown once to the admin who registers the host."""
    return secrets.token_hex(KEY_BYTES)


def new_delivery() -> str:
    """A fresh delivery nonce, put in each job message the site sends (and each re-send)."""
    return secrets.token_hex(16)


def _message(kind: str, job_id: int, delivery: str, sequence: int, body: object) -> bytes:
    return json.dumps(
        [kind, job_id, delivery, sequence, body],
        sort_keys=True,
        separators=(",", ":"),
        allow_nan=False,
    ).encode()


def sign(*, key: str, kind: str, job_id: int, delivery: str, sequence: int, body: object) -> str:
    """The host's signature over one message (hex)."""
    message = _message(kind, job_id, delivery, sequence, body)
    return hmac.new(bytes.fromhex(key), message, hashlib.sha256).hexdigest()


def verify(
    *,
    key: str,
    kind: str,
    job_id: int,
    delivery: str,
    sequence: int,
    body: object,
    signature: str,
) -> bool:
    """Whether the signature is the key holder's for exactly this message."""
    if not isinstance(signature, str) or not signature:
        return False
    try:
        expected = sign(
            key=key, kind=kind, job_id=job_id, delivery=delivery, sequence=sequence, body=body
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(expected, signature)
