"""The request body limit at the server's door (leaderboard/web/body_limit.py), called as the
servers call it; tests/system/test_web_server.py sends the same bodies to a real gunicorn."""

from __future__ import annotations

import asyncio
import json

from leaderboard.web.body_limit import RequestBodyLimit, WSGIRequestBodyLimit

LIMIT = 100


def scope(*headers: tuple[bytes, bytes]) -> dict:
    return {"type": "http", "method": "POST", "path": "/api/v1/uploads", "headers": list(headers)}


def call(chunks: list[bytes], *headers: tuple[bytes, bytes]) -> tuple[list[dict], int, int]:
    """What the limit sends for a body of `chunks`, how many bytes the application read and how
    many chunks the client was asked for."""
    sent: list[dict] = []
    read = 0
    asked = 0

    async def application(scope, receive, send) -> None:
        nonlocal read
        while True:
            message = await receive()
            read += len(message["body"])
            if not message["more_body"]:
                break
        await send({"type": "http.response.start", "status": 201, "headers": []})
        await send({"type": "http.response.body", "body": b"stored"})

    async def receive() -> dict:
        nonlocal asked
        asked += 1
        body = chunks[asked - 1]
        return {"type": "http.request", "body": body, "more_body": asked < len(chunks)}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(RequestBodyLimit(application, limit=LIMIT)(scope(*headers), receive, send))
    return sent, read, asked


def test_a_declared_body_over_the_limit_is_refused_before_a_byte_is_read():
    sent, read, asked = call([b"x" * 1000], (b"content-length", b"2147483648"))
    assert sent[0]["status"] == 413 and (b"connection", b"close") in sent[0]["headers"]
    assert json.loads(sent[1]["body"]) == {"detail": "The request body is larger than 100 bytes."}
    assert read == asked == 0


def test_a_chunked_body_is_refused_once_it_passes_the_limit_and_read_no_further():
    sent, read, asked = call([b"x" * 60] * 10, (b"transfer-encoding", b"chunked"))
    assert [message.get("status") for message in sent] == [413, None]
    assert asked == 2 and read == 60


def test_a_body_within_the_limit_reaches_the_application_whole():
    sent, read, _ = call([b"x" * 50, b"x" * 50], (b"content-length", b"100"))
    assert sent[0]["status"] == 201 and read == 100


def test_the_wsgi_limit_refuses_a_large_declared_body_and_a_chunked_one_and_passes_the_rest():
    started: list[str] = []

    def application(environ, start_response):
        start_response("200 OK", [])
        return [b"ok"]

    limited = WSGIRequestBodyLimit(application, limit=LIMIT)

    def status(**environ: str) -> str:
        limited(environ, lambda status, headers: started.append(status))
        return started[-1]

    assert status(CONTENT_LENGTH="101") == "413 Content Too Large"
    assert status(HTTP_TRANSFER_ENCODING="chunked") == "411 Length Required"
    assert status(CONTENT_LENGTH="100") == status(CONTENT_LENGTH="") == "200 OK"
