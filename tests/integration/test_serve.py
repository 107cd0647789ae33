"""`nerplat serve` on a real port, with real HTTP requests: bad input refused with the schema, no stack
traces, size limit, abandoned work stopped, and SIGTERM ends everything it started (issues M4, M5, item 5)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from host_load import scaled
from tiny_taggers import train_bundle

from nerplat.loopback import free_port

pytestmark = pytest.mark.slow

LIMIT = 4_000_000


class Server:
    """A `nerplat serve` process whose output is collected in the background."""

    def __init__(self, model: str, *flags: str):
        self.port = free_port()
        command = [sys.executable, "-m", "nerplat.cli", "serve", model, "--port", str(self.port), *flags]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        self.output: list[str] = []
        threading.Thread(target=lambda: self.output.extend(self.process.stdout), daemon=True).start()
        deadline = time.monotonic() + scaled(120)
        while not self._answers_ping():
            assert self.process.poll() is None, "".join(self.output)
            assert time.monotonic() < deadline, "no /ping in time"
            time.sleep(0.5)

    def _answers_ping(self) -> bool:
        try:
            return self.request("GET", "/ping", timeout=2)[0] == 200
        except OSError:
            return False

    def request(
        self, method: str, path: str, body: bytes | None = None, content_type: str = "application/json", timeout: float = 60
    ):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request(method, path, body=body, headers={"Content-Type": content_type} if body is not None else {})
            answer = connection.getresponse()
            return answer.status, answer.read().decode()
        finally:
            connection.close()

    def invoke(self, payload, **kwargs):
        return self.request("POST", "/invocations", json.dumps(payload).encode(), **kwargs)

    def wait_for_output(self, text: str, timeout: float) -> bool:
        deadline = time.monotonic() + scaled(timeout)
        while time.monotonic() < deadline:
            if text in "".join(self.output):
                return True
            time.sleep(0.2)
        return False

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model = str(train_bundle("softmax", tmp_path_factory.mktemp("bundle")))
    running = Server(model, "--max-request-bytes", str(LIMIT), "--timeout", "3")
    yield running
    running.stop()


def many_sentences(size: int) -> dict:
    sentence = "EU rejects German call to boycott British lamb and Peter Blackburn agrees ."
    row = {"text": sentence}
    return {"dataframe_records": [row] * (size // (len(json.dumps(row)) + 2) - 1)}


def test_a_good_request_is_tagged(server):
    status, body = server.invoke(
        {"dataframe_records": [{"text": "Peter Blackburn visited Brussels ."}, {"tokens": ["EU", "rejects"]}]}
    )
    assert status == 200
    first, second = json.loads(body)["predictions"]
    assert first["words"] == ["Peter", "Blackburn", "visited", "Brussels", "."] and second["words"] == ["EU", "rejects"]


@pytest.mark.parametrize(
    "body, content_type, status, message",
    [
        (b'{"inputs": ["EU rejects"]}', "application/json", 400, "row 0: expected an object"),
        (b'{"dataframe_records": [{"txt": "EU rejects"}]}', "application/json", 400, "unknown field 'txt'"),
        (b'{"dataframe_records": [{"text": "EU"}], "extra": 1}', "application/json", 400, "unknown field 'extra'"),
        (b"{}", "application/json", 400, "give exactly one of"),
        (b'{"inputs": []}', "application/json", 400, "holds no rows"),
        (b'{"dataframe_records": [', "application/json", 400, "not JSON"),
        (b"[" * 100_000, "application/json", 400, "JSON"),
        (b'{"dataframe_records": [{"text": "EU"}]}', "text/csv", 415, "Content-Type: application/json"),
    ],
)
def test_bad_input_gets_a_4xx_naming_the_schema_without_a_stack_trace(server, body, content_type, status, message):
    got, answer = server.request("POST", "/invocations", body, content_type)
    assert got == status and message in json.loads(answer)["message"]
    assert "Traceback" not in answer and ".py" not in answer and "/work" not in answer and "site-packages" not in answer


def test_a_body_over_the_limit_is_refused_unread(server):
    status, answer = server.request("POST", "/invocations", b" " * (LIMIT + 1))
    assert status == 413 and "--max-request-bytes" in json.loads(answer)["message"]


def test_work_whose_client_gave_up_is_stopped_and_the_next_request_is_fast(server):
    with pytest.raises(OSError):  # socket.timeout
        server.invoke(many_sentences(LIMIT - 1000), timeout=1.0)
    assert server.wait_for_output("the client disconnected", timeout=20), "".join(server.output)[-2000:]
    started = time.monotonic()
    assert server.invoke({"dataframe_records": [{"text": "EU rejects German call ."}]})[0] == 200
    assert time.monotonic() - started < scaled(10)


def test_work_over_the_timeout_is_stopped_with_504(server):
    status, answer = server.invoke(many_sentences(LIMIT - 1000), timeout=60)
    assert status == 504 and "--timeout" in json.loads(answer)["message"]


def test_sigterm_stops_the_server_and_frees_its_port(tmp_path_factory):
    model = str(train_bundle("softmax", tmp_path_factory.mktemp("bundle")))
    running = Server(model)
    try:
        running.process.send_signal(signal.SIGTERM)  # the process only, not its group
        running.process.wait(timeout=30)
        with pytest.raises(OSError):
            running.request("GET", "/ping", timeout=2)
    finally:
        running.stop()
