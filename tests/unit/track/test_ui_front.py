"""The front of MLflow's UI against a stand-in MLflow server: requests pass as they came, MLflow's
page alone comes back with nerplat's script (`track/view.py`)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from nerplat.loopback import free_port
from nerplat.track.ui_front import FrontServer, UpstreamServer
from nerplat.local_servers import LocalUiFront
from nerplat.track.view import RUNS_VIEW_TAG, browser_settings, experiment_view_key, runs_view_tag, with_browser_script

PAGE = b'<!doctype html><html><head><script src="main.js"></script></head><body></body></html>'
_, VIEW = runs_view_tag(params=["objective.lambda"], metrics=["test_micro_f1"], tags=[])


class StandInMlflow(BaseHTTPRequestHandler):
    """MLflow's page, its experiment search (two pages), and an echo of any other request."""

    seen: list[dict] = []

    def do_GET(self) -> None:
        if self.path == "/":
            self.answer(200, PAGE, "text/html; charset=utf-8")
        elif self.path.startswith("/ajax-api/2.0/mlflow/experiments/search"):
            first = "page_token" not in self.path
            experiments = [{"experiment_id": "1", "tags": [{"key": RUNS_VIEW_TAG, "value": VIEW}]}] if first else [
                {"experiment_id": "2", "tags": [{"key": "nerplat.bookkeeping_for", "value": "x"}]}
            ]
            self.record()
            self.answer(200, json.dumps({"experiments": experiments, **({"next_page_token": "t"} if first else {})}).encode())
        else:
            self.echo()

    def do_POST(self) -> None:
        self.echo()

    def echo(self) -> None:
        self.record()
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.answer(201, json.dumps({"method": self.command, "path": self.path, "body": body.decode()}).encode(), x_custom="kept")

    def record(self) -> None:
        self.seen.append({"path": self.path, **{key.lower(): value for key, value in self.headers.items()}})

    def answer(self, status: int, body: bytes, kind: str = "application/json", **extra: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for key, value in extra.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:
        pass


def _serve(server) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def front() -> Iterator[str]:
    StandInMlflow.seen = []
    with ThreadingHTTPServer(("127.0.0.1", 0), StandInMlflow) as upstream:
        _serve(upstream)
        with FrontServer(0, UpstreamServer(f"http://127.0.0.1:{upstream.server_port}")) as server:
            _serve(server)
            yield f"http://127.0.0.1:{server.server_port}"
            server.shutdown()
        upstream.shutdown()


def test_mlflows_page_comes_with_the_settings_of_every_experiment_read_with_the_browsers_credentials(front):
    request = urllib.request.Request(f"{front}/", headers={"Authorization": "Basic dTpw", "Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request) as answer:
        page = answer.read().decode()
        assert answer.headers["Cache-Control"] == "no-store"
    settings = browser_settings({"1": {RUNS_VIEW_TAG: VIEW}, "2": {}})  # every page of the search
    assert page == with_browser_script(PAGE.decode(), settings)
    assert experiment_view_key("1") in settings
    searches = [seen for seen in StandInMlflow.seen if seen["path"].startswith("/ajax-api/2.0/mlflow/experiments/search")]
    assert len(searches) == 2 and all(seen["authorization"] == "Basic dTpw" for seen in searches)


def test_other_requests_pass_as_they_came(front):
    request = urllib.request.Request(
        f"{front}/ajax-api/2.0/mlflow/runs/search?x=1", data=b'{"max_results": 3}', headers={"X-Mlflow-Thing": "yes"}
    )
    with urllib.request.urlopen(request) as answer:
        assert answer.status == 201 and answer.headers["X-Custom"] == "kept"
        echoed = json.load(answer)
    assert echoed == {"method": "POST", "path": "/ajax-api/2.0/mlflow/runs/search?x=1", "body": '{"max_results": 3}'}
    seen = StandInMlflow.seen[-1]
    assert seen["x-mlflow-thing"] == "yes"
    assert seen["host"].endswith(f":{front.rsplit(':', 1)[1]}") is False  # the server is asked under its own name


def test_a_server_that_does_not_answer_is_a_bad_gateway_that_names_it():
    port = free_port()
    with FrontServer(0, UpstreamServer(f"http://127.0.0.1:{port}")) as server:
        _serve(server)
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/health")
        server.shutdown()
    assert error.value.code == 502
    assert f"127.0.0.1:{port} did not answer" in error.value.read().decode()


def test_the_upstream_is_an_http_url():
    with pytest.raises(ValueError, match="not an http"):
        UpstreamServer("sqlite:///mlflow.db")
    assert UpstreamServer("https://mlflow.example.org/prefix/").prefix == "/prefix"


def test_the_front_process_is_this_python_running_the_front_module():
    front = LocalUiFront("http://127.0.0.1:5000")
    assert front.command()[1:] == ["-m", "nerplat.track.ui_front", "http://127.0.0.1:5000", str(front.port)]
    assert front.url == f"http://127.0.0.1:{front.port}"
