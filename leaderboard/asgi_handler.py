"""The web server's request handler: an asyncio front, and one thread hop per request.

gunicorn's asyncio workers read each request's head and body in the event loop, so an idle or
slow client holds no thread (tests/system/test_web_server.py). Django's own ASGIHandler then runs
the middleware chain in its async mode, where every hook of a sync middleware and the view each
hop to a thread and back: about twenty hand-offs a request, 8.5 ms for a cached API page on one
connection against 1.1 ms from a sync worker (docs/PERFORMANCE.md, "The deployed server").

This handler serves a request the way a WSGI worker does, once the request has fully arrived:
request_started, the sync middleware chain, the view and (for a response held in memory)
request_finished run in one call on a bounded pool of threads, and the event loop only sends the
response. A thread keeps its database connection between the requests it serves, for
DATABASE_CONN_MAX_AGE seconds, so the connections a process holds are at most its threads.

A 429 (a throttle, an allowance or a sign-in limit refused the request) is sent after
`REFUSAL_DELAY_SECONDS`, waited for in the event loop, where a waiting connection holds no thread.
A client that ignores Retry-After and asks again at once is then answered once a second per
connection, not as fast as the server can answer: a few anonymous clients looping on a throttled
download otherwise take the CPU the other visitors' pages need, however cheap each refusal is.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing

from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.http import FileResponse, HttpResponseBase
from django.urls import set_script_prefix

REFUSAL_DELAY_SECONDS = 1.0


class PooledASGIHandler(ASGIHandler):
    """Django over ASGI with the middleware chain in sync mode, run on `threads` threads."""

    def __init__(self, *, threads: int):
        if threads < 1:
            raise ValueError("the web handler needs at least one thread")
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="specboard-web")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            # As Django's handler: the server then runs without lifespan events.
            raise ValueError(f"Specboard serves HTTP connections only, not {scope['type']}")
        await self.handle(scope, receive, send)

    async def handle(self, scope, receive, send):
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        with closing(body_file):
            # Run in the pool thread's own context, not a copy of the event loop's: what
            # Django keeps per context (the cache backends and their Redis connection pools)
            # then lasts from one request to the next, as in a WSGI worker's thread, instead of
            # a new Redis connection for every request.
            loop = asyncio.get_running_loop()
            response = await loop.run_in_executor(self.pool, self.respond, scope, body_file)
            try:
                if response.status_code == 429:
                    await asyncio.sleep(REFUSAL_DELAY_SECONDS)
                async with asyncio.TaskGroup() as group:
                    # A client gone before the response is sent ends the sending.
                    listener = group.create_task(self.listen_for_disconnect(receive))
                    await self.send_response(response, send)
                    listener.cancel()
            except* RequestAborted:
                pass
            finally:
                if response.streaming:
                    # Its body was read as it was sent; closing it ends the request.
                    await loop.run_in_executor(self.pool, response.close)

    def respond(self, scope, body_file) -> HttpResponseBase:
        """The whole sync part of a request, in one pool thread: the response to send."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
            response._handler_class = self.__class__
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size
        if not response.streaming:
            # Its body is in memory: request_finished (which closes or keeps this thread's
            # database connection) runs here, in the thread that used the connection.
            response.close()
        return response
