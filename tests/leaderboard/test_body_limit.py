"""The request body limit at the server's door (leaderboard/web/body_limit.py), called as the
servers call it; tests/system/test_web_server.py sends the same bodies to a real gunicorn."""

from __future__ import annotations

from leaderboard.web.body_limit import WSGIRequestBodyLimit

LIMIT = 100


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
