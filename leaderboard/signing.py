"""Signatures on what a GPU host sends back: HMAC-SHA256 with the host's own key.

A GPU host holds its name and the key an admin issued when registering it
(`manage.py register_gpu_host`); every progress event, result and failure it sends carries the
host's name and a signature over the message kind, the job id and the body. The database side
recomputes it with the key it stored for that host. Plain Python: the GPU side has no database.
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


def _message(kind: str, job_id: int, body: object) -> bytes:
    return json.dumps(
        [kind, job_id, body], sort_keys=True, separators=(",", ":"), allow_nan=False
    ).encode()


def sign(*, key: str, kind: str, job_id: int, body: object) -> str:
    """The host's signature over one message (hex)."""
    return hmac.new(bytes.fromhex(key), _message(kind, job_id, body), hashlib.sha256).hexdigest()


def verify(*, key: str, kind: str, job_id: int, body: object, signature: str) -> bool:
    """Whether the signature is the key holder's for exactly this message."""
    if not isinstance(signature, str) or not signature:
        return False
    try:
        expected = sign(key=key, kind=kind, job_id=job_id, body=body)
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(expected, signature)
