"""The inspector's web app (Starlette): one static page and a small JSON API over `Inspector`.

Least privilege: it answers only requests whose Host is the address it was started on (a page
elsewhere cannot reach it through DNS rebinding); it steps instances only when started with
`allow_send`, and then only for a JSON POST from its own origin (a form on another site cannot
send one); its page loads nothing from elsewhere (Content-Security-Policy).

Live updates are server-sent events: the stream of an instance page says `step` whenever the
instance's record changes (another process's step too: the store is polled, every
`POLL_SECONDS`), the stream of the list page says `change` when any instance changed.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from flowc.hosts.inspect.listing import ListFilter, parse_key
from flowc.hosts.inspect.source import PAGE, Inspector, ReadOnly
from flowc.runtime.store import InstanceNotFound, StoreError

#: How often a live stream looks at the store.
POLL_SECONDS = 0.05
#: A comment line this often keeps idle streams open through proxies.
KEEPALIVE_SECONDS = 15.0

_STATIC = {
    "index.html": "text/html; charset=utf-8",
    "inspect.js": "text/javascript; charset=utf-8",
    "inspect.css": "text/css; charset=utf-8",
}
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

Handler = Callable[[Request], Awaitable[Response]]


def create_app(inspector: Inspector, *, hosts: list[str] | None = None) -> Starlette:
    """The app over `inspector`; `hosts` are the Host names it answers (default: the local
    ones)."""

    def api(fn: Callable[[Request], Any]) -> Handler:
        async def endpoint(request: Request) -> Response:
            try:
                data = await run_in_threadpool(fn, request)
            except InstanceNotFound as exc:
                return _error(404, str(exc))
            except ReadOnly as exc:
                return _error(403, str(exc))
            except (ValueError, TypeError) as exc:
                return _error(400, str(exc))
            except StoreError as exc:
                return _error(503, str(exc))
            if isinstance(data, Response):
                return data
            return JSONResponse(data, headers=_SECURITY_HEADERS)

        return endpoint

    def listing(request: Request) -> Any:
        return inspector.instances(_filters(request))

    def instance(request: Request) -> Any:
        return inspector.instance(request.path_params["id"])

    def timeline(request: Request) -> Any:
        q = request.query_params
        before = int(q["before"]) if q.get("before") else None
        limit = int(q.get("limit") or PAGE)
        return inspector.timeline(request.path_params["id"], before=before, limit=limit)

    def diagram(request: Request) -> Any:
        svg = inspector.diagram(request.path_params["id"])
        return Response(svg, media_type="image/svg+xml", headers=_SECURITY_HEADERS)

    async def act(request: Request) -> Response:
        if not inspector.allow_send:
            return _error(403, "this inspector is read-only: start it with --allow-send")
        _same_origin(request)
        try:
            action = await request.json()
        except ValueError:
            return _error(400, "the body is not JSON")
        if not isinstance(action, dict):
            return _error(400, "the body is a JSON object")

        def step(r: Request) -> Any:
            outcome = inspector.act(r.path_params["id"], action)
            return {"status": outcome.status, **outcome.data}

        return await api(step)(request)

    async def instance_events(request: Request) -> Response:
        instance_id = request.path_params["id"]
        return _stream(request, lambda: inspector.version(instance_id), "step")

    async def list_events(request: Request) -> Response:
        return _stream(request, inspector.latest_change, "change")

    async def static(request: Request) -> Response:
        name = request.path_params.get("name", "index.html")
        if name not in _STATIC:
            raise HTTPException(404)
        body = resources.files("flowc.hosts.inspect.static").joinpath(name).read_bytes()
        return Response(body, media_type=_STATIC[name], headers=_SECURITY_HEADERS)

    routes = [
        Route("/", static),
        Route("/static/{name}", static),
        Route("/api/instances", api(listing)),
        Route("/api/events", list_events),
        Route("/api/instances/{id}", api(instance)),
        Route("/api/instances/{id}/timeline", api(timeline)),
        Route("/api/instances/{id}/diagram.svg", api(diagram)),
        Route("/api/instances/{id}/events", instance_events),
        Route("/api/instances/{id}/act", act, methods=["POST"]),
    ]
    allowed = hosts or ["127.0.0.1", "localhost", "[::1]"]
    return Starlette(
        routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=allowed)]
    )


def _filters(request: Request) -> ListFilter:
    q = request.query_params
    final = q.get("final")
    return ListFilter(
        flow=q.get("flow") or None,
        version=int(q["version"]) if q.get("version") else None,
        state=q.get("state") or None,
        final=None if not final else final == "yes",
        since=_finite(q["since"]) if q.get("since") else None,
        text=q.get("text") or None,
        after=parse_key(q["after"]) if q.get("after") else None,
        limit=int(q.get("limit") or 50),
    )


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("`since` is seconds since the epoch")
    return value


def _same_origin(request: Request) -> None:
    """A step is taken only for a JSON body sent by a page of this app: browsers send such a
    request from another origin only after a CORS check this app never passes."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise HTTPException(415, "steps are sent as application/json")
    origin = request.headers.get("origin")
    if origin is not None and origin.split("://", 1)[-1] != request.headers.get("host"):
        raise HTTPException(403, "a step is taken only from the inspector's own page")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=_SECURITY_HEADERS)


def _stream(request: Request, probe: Callable[[], object], name: str) -> StreamingResponse:
    async def events() -> AsyncIterator[str]:
        last = await run_in_threadpool(probe)
        yield f"event: ready\ndata: {json.dumps(last)}\n\n"
        idle = 0.0
        while not await request.is_disconnected():
            await asyncio.sleep(POLL_SECONDS)
            try:
                now = await run_in_threadpool(probe)
            except (InstanceNotFound, StoreError) as exc:
                yield f"event: gone\ndata: {json.dumps(str(exc))}\n\n"
                return
            if now != last:
                last, idle = now, 0.0
                yield f"event: {name}\ndata: {json.dumps(now)}\n\n"
                continue
            idle += POLL_SECONDS
            if idle >= KEEPALIVE_SECONDS:
                idle = 0.0
                yield ": keep-alive\n\n"

    headers = {**_SECURITY_HEADERS, "X-Accel-Buffering": "no"}
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)
