"""The /invocations body: MLflow's input formats, strictly; headers and bodies that come too large or too
slowly, on a loopback port (a real model served is tested in tests/integration/test_serve.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time

import pytest

from nerplat.serving.http_server import (
    HEADER_BYTES, Refused, ServingLimits, rows_of_payload, server_config, tagging_app,
)


@pytest.mark.parametrize(
    "payload, rows",
    [
        ({"dataframe_records": [{"text": "EU rejects"}, {"tokens": ["Peter"]}]}, [{"text": "EU rejects"}, {"tokens": ["Peter"]}]),
        ({"dataframe_split": {"columns": ["text"], "data": [["EU rejects"]]}}, [{"text": "EU rejects"}]),
        ({"dataframe_split": {"columns": ["text", "tokens"], "data": [["a b", None], [None, ["c"]]]}},
         [{"text": "a b", "tokens": None}, {"text": None, "tokens": ["c"]}]),
        ({"inputs": [{"text": "x"}]}, [{"text": "x"}]),
        ({"inputs": [{"text": ""}, {"tokens": []}]}, [{"text": ""}, {"tokens": []}]),  # no words: tagged to empty lists
        ({"instances": {"text": ["x", "y"]}}, [{"text": "x"}, {"text": "y"}]),
    ],
)
def test_mlflow_input_formats_give_rows(payload, rows):
    assert rows_of_payload(payload) == rows


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"inputs": ["EU rejects"]}, "row 0: expected an object"),
        ({"inputs": []}, "holds no rows"),
        ({"dataframe_records": [{"txt": "EU"}]}, "row 0: unknown field 'txt'"),
        ({"dataframe_records": [{}]}, "no 'text' and no 'tokens'"),
        ({"dataframe_records": [{"text": "a", "tokens": ["a"]}]}, "both 'text' and 'tokens'"),
        ({"dataframe_records": [{"text": 3}]}, "'text' must be a string"),
        ({"dataframe_records": [{"tokens": "a b"}]}, "'tokens' must be a list of strings"),
        ({"dataframe_records": [{"text": "a"}], "params": {}}, "unknown field 'params'"),
        ({"data": [{"text": "a"}]}, "unknown field 'data'"),
        ({}, "found none of them"),
        ([{"text": "a"}], "the body is a JSON list"),
        ({"dataframe_split": {"columns": ["text"], "data": [["a", "b"]]}}, "list of 1 values"),
        ({"dataframe_records": [{"x": 1}] * 7}, "and 2 more rows"),
    ],
)
def test_bad_bodies_are_refused_with_400_naming_the_schema(payload, message):
    with pytest.raises(Refused, match=message) as refused:
        rows_of_payload(payload)
    assert refused.value.status == 400
    assert '{"text": "a sentence"}' in refused.value.message and "Traceback" not in refused.value.message


def echo_tagger(rows, stop):
    """Tags every word O and echoes it back, as the real records do."""
    return [
        {"words": (words := row["text"].split() if "text" in row else row["tokens"]), "tags": ["O"] * len(words), "spans": []}
        for row in rows
    ]


def call(method: str, path: str, chunks: tuple[bytes, ...] = (b"",), disconnect: bool = False) -> tuple[int, dict]:
    """One request straight through the ASGI interface of `tagging_app` (no network): status and JSON answer.

    The body arrives in `chunks`; with `disconnect` the client leaves before the last one.
    """
    app = tagging_app(echo_tagger, ServingLimits(), "test")
    messages = [
        {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1} for index, chunk in enumerate(chunks)
    ]
    if disconnect:
        messages = messages[:-1] + [{"type": "http.disconnect"}]
    sent: list[dict] = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http", "path": path,
        "raw_path": path.encode(), "root_path": "", "query_string": b"", "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 5001),
    }
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(body) if body else {}


def test_a_good_body_is_tagged():
    status, answer = call("POST", "/invocations", (b'{"inputs": [{"text": "EU rejects"}]}',))
    assert status == 200 and answer["predictions"][0]["words"] == ["EU", "rejects"]


@pytest.mark.parametrize("row", [{"text": "a \\ud800 b"}, {"tokens": ["a", "\\udfff"]}])
def test_a_lone_surrogate_is_refused_with_400_naming_it(row, caplog):
    body = json.dumps({"dataframe_records": [row]}).replace("\\\\u", "\\u").encode()
    status, answer = call("POST", "/invocations", (body,))
    assert status == 400 and "lone surrogate" in answer["message"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_client_leaving_mid_body_is_one_info_line_not_an_error(caplog):
    caplog.set_level(logging.DEBUG)
    status, _ = call("POST", "/invocations", (b'{"inputs": [', b'{"text": "EU"}]}'), disconnect=True)
    assert status == 499
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert len([r for r in caplog.records if "disconnected" in r.getMessage()]) == 1


@pytest.mark.parametrize(
    "method, path, status, message",
    [("GET", "/nothing", 404, "POST /invocations"), ("GET", "/invocations", 405, "use POST"), ("POST", "/ping", 405, "use GET")],
)
def test_unknown_paths_and_methods_get_a_json_error(method, path, status, message):
    got, answer = call(method, path)
    assert got == status and message in answer["message"] and answer["error_code"]


@pytest.fixture
def served():
    """`tagging_app` served as `nerplat serve` serves it, on a free loopback port: (port, its limits)."""
    import threading

    import uvicorn

    from nerplat.loopback import free_port

    limits = ServingLimits(body_timeout=1.0)
    port = free_port()
    server = uvicorn.Server(server_config(tagging_app(echo_tagger, limits, "test"), "127.0.0.1", port, quiet=True))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    yield port
    server.should_exit = True
    thread.join(timeout=10)


def answer_of(connection: socket.socket) -> tuple[int, dict]:
    """The status and JSON body of the one answer on `connection`, read until the server closes it."""
    status, _, answer = answer_with_head_of(connection)
    return status, answer


def answer_with_head_of(connection: socket.socket) -> tuple[int, str, dict]:
    """`answer_of` with the answer's header lines, lower-cased."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split()[1]), head.decode("latin-1").lower(), json.loads(body)


def test_headers_beyond_the_limit_are_answered_431_in_json(served):
    """Issue 62: a 200 KB header got a reset without an HTTP answer."""
    with socket.create_connection(("127.0.0.1", served), timeout=10) as connection:
        connection.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n")
        status, answer = answer_of(connection)
    assert status == 431 and answer["error_code"] == "REQUEST_HEADER_FIELDS_TOO_LARGE"
    assert f"larger than {HEADER_BYTES:,} bytes" in answer["message"]


def test_a_body_that_does_not_arrive_in_time_is_answered_408_and_the_connection_closed(served):
    """Issue 62: serve had no body-read timeout (1,500 partial bodies held open, one descriptor each)."""
    with socket.create_connection(("127.0.0.1", served), timeout=10) as connection:
        connection.sendall(
            b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        status, head, answer = answer_with_head_of(connection)  # returns once the server has closed the connection
    assert status == 408 and answer["error_code"] == "REQUEST_TIMEOUT" and "did not arrive within 1 s" in answer["message"]
    assert "connection: close" in head  # closed with the answer, not at the keep-alive timeout
