"""`nerplat serve`: a tagger over HTTP, on MLflow's scoring protocol, refusing what it cannot serve.

The endpoints of `mlflow models serve`: GET /ping and /health (200 once the model is loaded), GET
/version, and POST /invocations with a JSON body in one of MLflow's input formats, each row being
`rows.ROW_SCHEMA`:

    {"dataframe_records": [{"text": "EU rejects German call ."}, {"tokens": ["Peter", "Blackburn"]}]}
    {"dataframe_split": {"columns": ["text"], "data": [["EU rejects German call ."]]}}
    {"inputs": [ROW, ...]} or {"instances": [ROW, ...]}, or columns: {"inputs": {"text": [...]}}

answered with `{"predictions": [record, ...]}` (`nerplat.serving.records`). Unlike MLflow's
scoring server, where every input of the signature is optional and anything gets HTTP 200:

- a body over `max_request_bytes` is refused (413) without being read whole, and one that has not
  arrived within `body_timeout` seconds (408), so clients sending slowly cannot hold connections;
- headers over `HEADER_BYTES` are answered 431, and a request that is not HTTP 400, in JSON, and the
  connection is closed only after the answer (uvicorn answered a bare 400 and reset the connection);
- a body without rows, with an unknown field or a malformed row (a lone surrogate such as "\\ud800"
  included: JSON allows it, UTF-8 cannot carry it) is refused (400), the message naming the expected
  schema;
- requests are tagged one at a time in a worker thread; at most `max_waiting` wait (503 beyond);
- a request's tagging stops within one batch when its client disconnects or `timeout` passes (504),
  so abandoned work cannot pile up; a client that leaves mid-body gets one info line in the log;
- errors, 404 and 405 included, are `{"error_code": ..., "message": ...}`, never a stack trace or a server path; an
  unexpected failure is logged on the server's stderr and answered 500.

It runs in the `nerplat serve` process (uvicorn), so SIGTERM or Ctrl-C stops all of it.
"""

from __future__ import annotations

import asyncio
import errno
import contextlib
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from nerplat.errors import Problem, UserInputError
from nerplat.serving.predictor import TaggingStopped
from nerplat.serving.rows import ROW_SCHEMA, row_problem

INPUT_FORMATS = ("dataframe_records", "dataframe_split", "inputs", "instances")
EXPECTED = (
    f'a JSON object {{"dataframe_records": [ROW, ...]}} where ROW is {ROW_SCHEMA} '
    '(MLflow\'s "dataframe_split", "inputs" and "instances" are accepted too)'
)
ENDPOINTS = "POST /invocations and GET /ping, /health, /version"
PROBLEMS_SHOWN = 5  # a request with 10,000 bad rows gets the first few, not a 1 MB answer
HEADER_BYTES = 16 * 1024  # a request line and headers longer than this are refused (h11's own default limit)
LINGER_SECONDS = 2.0  # how long a refused connection stays open for its answer to be read
_log = logging.getLogger("uvicorn.error")  # printed by uvicorn's default logging setup


@dataclass(frozen=True)
class ServingLimits:
    max_request_bytes: int = 1_000_000
    timeout: float = 60.0  # seconds a request may take, waiting included
    max_waiting: int = 8  # requests queued or running at once; more are answered 503
    body_timeout: float = 30.0  # seconds a request body may take to arrive; then 408


class Refused(Exception):
    """A request answered with an error status and a message for the client (no stack trace)."""

    def __init__(self, status: int, message: str, error_code: str = "BAD_REQUEST"):
        super().__init__(message)
        self.status, self.message, self.error_code = status, message, error_code


class ClientGone(Exception):
    """The client disconnected before its answer was ready."""


def rows_of_payload(payload: Any) -> list[dict[str, Any]]:
    """The input rows of a decoded /invocations body; `Refused` (400) naming the schema otherwise."""
    if not isinstance(payload, dict):
        raise Refused(400, f"the body is a JSON {type(payload).__name__}: expected {EXPECTED}")
    unknown = sorted(set(payload) - set(INPUT_FORMATS))
    given = [key for key in INPUT_FORMATS if key in payload]
    if unknown:
        raise Refused(400, f"unknown field {', '.join(repr(k) for k in unknown)}: expected {EXPECTED}")
    if len(given) != 1:
        found = "none of them" if not given else ", ".join(given)
        raise Refused(400, f"give exactly one of {', '.join(INPUT_FORMATS)} (found {found}): expected {EXPECTED}")
    rows = _rows(given[0], payload[given[0]])
    if not rows:
        raise Refused(400, f"'{given[0]}' holds no rows: expected {EXPECTED}")
    problems = [f"row {index}: {problem}" for index, row in enumerate(rows) if (problem := row_problem(row)) is not None]
    if problems:
        more = f" (and {len(problems) - PROBLEMS_SHOWN} more rows)" if len(problems) > PROBLEMS_SHOWN else ""
        raise Refused(400, f"{'; '.join(problems[:PROBLEMS_SHOWN])}{more}. Expected {EXPECTED}")
    return rows


def _rows(name: str, value: Any) -> list[Any]:
    if name == "dataframe_split":
        if not isinstance(value, dict) or not isinstance(value.get("columns"), list) or not isinstance(value.get("data"), list):
            raise Refused(400, f"'dataframe_split' must be {{\"columns\": [...], \"data\": [[...], ...]}}: expected {EXPECTED}")
        columns = value["columns"]
        if any(not isinstance(row, list) or len(row) != len(columns) for row in value["data"]):
            raise Refused(
                400,
                f"'dataframe_split': every row of 'data' must be a list of {len(columns)} values, one per column: "
                f"expected {EXPECTED}",
            )
        return [dict(zip(columns, row)) for row in value["data"]]
    if isinstance(value, dict) and name != "dataframe_records":  # columns: {"text": [...]}
        lengths = {len(column) if isinstance(column, list) else -1 for column in value.values()}
        if len(lengths) != 1 or -1 in lengths:
            raise Refused(400, f"'{name}' as columns must map each field to a list, all of one length: expected {EXPECTED}")
        return [dict(zip(value, cells)) for cells in zip(*value.values())]
    if not isinstance(value, list):
        raise Refused(400, f"'{name}' must be a list of rows, not a JSON {type(value).__name__}: expected {EXPECTED}")
    return value


class TaggingQueue:
    """Runs tagging jobs one at a time in a worker thread, each stoppable between batches."""

    def __init__(self, tag: Callable[[list[dict[str, Any]], Callable[[], bool]], list[dict[str, Any]]], limits: ServingLimits):
        self._tag = tag
        self._limits = limits
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tagging")
        self._jobs = 0  # queued or running; only touched on the event loop

    async def run(self, rows: list[dict[str, Any]], client_gone: Callable[[], Awaitable[bool]]) -> list[dict[str, Any]]:
        """The records of `rows`; Refused (503, 504) or ClientGone, having stopped the job."""
        if self._jobs >= self._limits.max_waiting:
            raise Refused(503, f"busy: {self._jobs} requests are queued or running; retry later", "TEMPORARILY_UNAVAILABLE")
        loop = asyncio.get_running_loop()
        stop = threading.Event()
        job = asyncio.wrap_future(self._executor.submit(self._job, rows, stop))
        self._jobs += 1
        job.add_done_callback(self._finished)
        deadline = loop.time() + self._limits.timeout
        try:
            while True:
                done, _ = await asyncio.wait({job}, timeout=0.2)
                if done:
                    return job.result()
                if await client_gone():
                    _log.info("stopped tagging %d rows: the client disconnected", len(rows))
                    raise ClientGone
                if loop.time() > deadline:
                    _log.info("stopped tagging %d rows after %.0f s (--timeout)", len(rows), self._limits.timeout)
                    raise Refused(
                        504,
                        f"tagging took longer than {self._limits.timeout:g} s and was stopped: send fewer or shorter "
                        "sentences per request (the server's --timeout sets the limit)",
                        "DEADLINE_EXCEEDED",
                    )
        finally:
            if not job.done():
                stop.set()  # also when this request is cancelled (the server shuts down)

    def _finished(self, job: asyncio.Future) -> None:
        self._jobs -= 1
        if not job.cancelled():
            job.exception()  # retrieved: a stopped job's exception is expected, not "never retrieved"

    def _job(self, rows: list[dict[str, Any]], stop: threading.Event) -> list[dict[str, Any]]:
        if stop.is_set():  # given up while it waited
            raise TaggingStopped
        return self._tag(rows, stop.is_set)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def tagging_app(
    tag: Callable[[list[dict[str, Any]], Callable[[], bool]], list[dict[str, Any]]], limits: ServingLimits, version: str
) -> Any:
    """The ASGI application: `tag(rows, stop)` turns validated rows into records."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route

    queue = TaggingQueue(tag, limits)

    async def ping(request: Request) -> Response:
        return PlainTextResponse("\n")

    async def show_version(request: Request) -> Response:
        return PlainTextResponse(f"nerplat {version}\n")

    async def invocations(request: Request) -> Response:
        try:
            body = await _read_body_in_time(request, limits)
            rows = rows_of_payload(_decode(body, request.headers.get("content-type")))
            return JSONResponse({"predictions": await queue.run(rows, request.is_disconnected)})
        except Refused as refused:
            return refusal_response(refused)
        except ClientGone:
            return Response(status_code=499)  # nobody reads it
        except Exception:
            _log.exception("tagging a request failed")
            message = "tagging failed on the server; its log has the details"
            return JSONResponse({"error_code": "INTERNAL_ERROR", "message": message}, status_code=500)

    async def routing_error(request: Request, error: Exception) -> Response:
        """Starlette's 404 and 405, as JSON like every other error (its default is plain text)."""
        assert isinstance(error, HTTPException)
        where = f"{request.method} {request.url.path}"
        if error.status_code == 404:
            message, code = f"no endpoint {where}: this server answers {ENDPOINTS}", "ENDPOINT_NOT_FOUND"
        elif error.status_code == 405:
            allowed = [m.strip() for m in (error.headers or {}).get("Allow", "").split(",") if m.strip() not in ("", "HEAD")]
            message, code = (
                f"{where} is not allowed: use {' or '.join(allowed)} (this server answers {ENDPOINTS})", "METHOD_NOT_ALLOWED"
            )
        else:
            message, code = f"{where}: {error.detail}", "BAD_REQUEST"
        return JSONResponse({"error_code": code, "message": message}, status_code=error.status_code, headers=error.headers)

    routes = [
        Route("/ping", ping, methods=["GET"]),
        Route("/health", ping, methods=["GET"]),
        Route("/version", show_version, methods=["GET"]),
        Route("/invocations", invocations, methods=["POST"]),
    ]
    @contextlib.asynccontextmanager
    async def lifespan(app: Any):
        yield
        queue.close()

    return Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: routing_error})


def refusal_response(refused: Refused) -> Any:
    """The JSON answer of a refused request. A body that stopped arriving (408) leaves the connection
    unusable: the answer closes it, rather than uvicorn's keep-alive timeout. Not a 413: its client is
    still sending, and a close would reset the connection before it reads the answer."""
    from starlette.responses import JSONResponse

    closing = {"connection": "close"} if refused.status == 408 else None
    answer = {"error_code": refused.error_code, "message": refused.message}
    return JSONResponse(answer, status_code=refused.status, headers=closing)


async def _read_body_in_time(request: Any, limits: ServingLimits) -> bytes:
    """`_read_body` within `limits.body_timeout` seconds (`Refused` 408 beyond): a client that sends
    a body slowly, or never finishes it, held a connection and a descriptor for as long as it liked."""
    try:
        return await asyncio.wait_for(_read_body(request, limits.max_request_bytes), limits.body_timeout)
    except TimeoutError:
        _log.info("dropped a request: its body did not arrive within %g s", limits.body_timeout)
        raise Refused(
            408, f"the request body did not arrive within {limits.body_timeout:g} s: send it whole, at once",
            "REQUEST_TIMEOUT",
        ) from None


async def _read_body(request: Any, limit: int) -> bytes:
    """The body, at most `limit` bytes (`Refused` 413 beyond); `ClientGone` when the client leaves mid-body."""
    from starlette.requests import ClientDisconnect

    too_large = Refused(
        413, f"the request is larger than {limit:,} bytes: split it, or raise the server's --max-request-bytes",
        "REQUEST_TOO_LARGE",
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise too_large
    except ClientDisconnect:  # an ordinary event (a killed curl, a client timeout), not a server fault
        _log.info("dropped a request: the client disconnected after %d bytes of its body", len(body))
        raise ClientGone from None
    return bytes(body)


def _decode(body: bytes, content_type: str | None) -> Any:
    if (content_type or "").split(";")[0].strip().lower() != "application/json":
        raise Refused(
            415,
            f"send JSON with the header Content-Type: application/json (got {content_type or 'none'}): expected {EXPECTED}",
            "UNSUPPORTED_MEDIA_TYPE",
        )
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise Refused(400, f"the body is not JSON ({error}): expected {EXPECTED}") from None
    except RecursionError:
        raise Refused(400, "the body is JSON nested too deeply to read") from None


def serve_forever(app: Any, host: str, port: int, quiet: bool = False) -> None:
    """Serves `app` until SIGINT or SIGTERM (uvicorn's handlers), then stops its running job."""
    import uvicorn

    uvicorn.Server(server_config(app, host, port, quiet)).run()


def server_config(app: Any, host: str, port: int, quiet: bool = False) -> Any:
    """The uvicorn settings `nerplat serve` runs `app` with."""
    import uvicorn

    return uvicorn.Config(
        app, host=host, port=port, log_level="warning" if quiet else "info", timeout_graceful_shutdown=5,
        http=refusing_protocol(), h11_max_incomplete_event_size=HEADER_BYTES,
    )


def refusing_protocol() -> type:
    """uvicorn's HTTP/1.1 protocol, answering a request it cannot parse as this server answers every
    error: 431 for headers over `HEADER_BYTES`, else 400, in JSON; it then stops reading and closes the
    connection `LINGER_SECONDS` after its end of it, so the client reads the answer instead of a reset."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class RefusingH11Protocol(H11Protocol):
        answered = False

        def data_received(self, data: bytes) -> None:
            if not self.answered:  # the rest of a refused request is dropped
                super().data_received(data)

        def send_400_response(self, msg: str) -> None:
            if len(self.conn.trailing_data[0]) > HEADER_BYTES:
                status, reason, code = 431, "Request Header Fields Too Large", "REQUEST_HEADER_FIELDS_TOO_LARGE"
                message = f"the request line and headers are larger than {HEADER_BYTES:,} bytes: send shorter ones"
            else:
                status, reason, code = 400, "Bad Request", "BAD_REQUEST"
                message = f"not an HTTP/1.1 request this server can read; it answers {ENDPOINTS}"
            body = json.dumps({"error_code": code, "message": message}).encode()
            head = (
                f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
                "connection: close\r\n\r\n"
            )
            self.transport.write(head.encode() + body)
            self.answered = True
            if self.transport.can_write_eof():
                self.transport.write_eof()
            asyncio.get_running_loop().call_later(LINGER_SECONDS, self.transport.close)

    return RefusingH11Protocol


def check_address(host: str, port: int) -> None:
    """Refuses a host and port the server could not listen on, before the model is loaded."""
    import socket

    try:
        with socket.create_server((host, port)):
            pass
    except OSError as error:
        reason = (
            "in use: pick another with --port" if error.errno == errno.EADDRINUSE
            else f"not available ({error.strerror or error})"
        )
        raise UserInputError(Problem(
            f"cannot listen on {host}:{port}: {reason}", path="--port" if error.errno == errno.EADDRINUSE else "--host"
        )) from None
