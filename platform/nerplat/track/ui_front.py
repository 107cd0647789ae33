"""The front through which `nerplat ui` serves MLflow's UI: `python -m nerplat.track.ui_front UPSTREAM PORT`.

It listens on 127.0.0.1:PORT and passes every request to the MLflow server at UPSTREAM as it came
(method, path, headers, body; answers streamed back), so the UI, its API calls and its artifacts
behave as on the server itself. One page differs: MLflow's own (`/`), which gets `track/view.py`'s
script first in its <head>, with the settings of the experiments the server holds at that moment
(read through MLflow's REST API with the browser's own credentials, so a server behind a login
works too). The script has to run on the server's origin, as only that origin's pages can write
the browser's storage for MLflow's UI; hence a front rather than a link or a server option.

Standard library only, so that it starts in a fraction of a second.
"""

from __future__ import annotations

import http.client
import json
import sys
import urllib.parse
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from nerplat.track.view import browser_settings, with_browser_script

HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers", "transfer-encoding", "upgrade"
}
OWN_HEADERS = {"server", "date"}  # the front's answer carries its own
CREDENTIALS = ("Authorization", "Cookie")  # what the experiments' settings are read with
BLOCK = 64 * 1024
UPSTREAM_TIMEOUT = 300.0  # seconds; a long artifact download or a streamed answer stays open


class UpstreamServer:
    """The MLflow server behind the front: its URL, split."""

    def __init__(self, url: str):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL of an MLflow server: {url!r}")
        self.scheme, self.netloc, self.host, self.port = parts.scheme, parts.netloc, parts.hostname, parts.port
        self.prefix = parts.path.rstrip("/")  # a server run with --static-prefix

    def connect(self) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return kind(self.host, self.port, timeout=UPSTREAM_TIMEOUT)

    def experiment_tags(self, credentials: Mapping[str, str]) -> dict[str, dict[str, str]]:
        """Experiment id -> its tags, for every active experiment (empty when the server refuses)."""
        found: dict[str, dict[str, str]] = {}
        token = None
        while True:
            query = urllib.parse.urlencode({"max_results": 1000, **({"page_token": token} if token else {})})
            connection = self.connect()
            try:
                path = f"{self.prefix}/ajax-api/2.0/mlflow/experiments/search?{query}"
                connection.request("GET", path, headers={**credentials, "Host": self.netloc})
                answer = connection.getresponse()
                if answer.status != 200:
                    return found
                page = json.loads(answer.read())
            finally:
                connection.close()
            for experiment in page.get("experiments", []):
                found[experiment["experiment_id"]] = {tag["key"]: tag.get("value", "") for tag in experiment.get("tags", [])}
            token = page.get("next_page_token")
            if not token:
                return found


class FrontHandler(BaseHTTPRequestHandler):
    """Passes a request to the upstream server; MLflow's page comes back with nerplat's settings script."""

    server: FrontServer

    def do_GET(self) -> None:
        self.forward()

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    def forward(self) -> None:
        upstream = self.server.upstream
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = [(key, value) for key, value in self.headers.items() if key.lower() not in HOP_BY_HOP | {"host"}]
        is_page = self.command == "GET" and urllib.parse.urlsplit(self.path).path in ("/", "/index.html")
        if is_page:  # the page is rewritten, so it must come uncompressed
            headers = [(key, value) for key, value in headers if key.lower() != "accept-encoding"]
        connection = upstream.connect()
        try:
            connection.putrequest(self.command, f"{upstream.prefix}{self.path}", skip_host=True, skip_accept_encoding=True)
            connection.putheader("Host", upstream.netloc)
            for key, value in headers:
                connection.putheader(key, value)
            connection.endheaders(body)
            answer = connection.getresponse()
        except OSError as error:
            connection.close()
            self.send_error(502, f"the MLflow server at {upstream.scheme}://{upstream.netloc} did not answer: {error}")
            return
        try:
            if is_page and answer.status == 200 and answer.getheader("Content-Type", "").startswith("text/html"):
                credentials = {key: value for key, value in headers if key in CREDENTIALS}
                page = with_browser_script(answer.read().decode(), browser_settings(upstream.experiment_tags(credentials)))
                self.answer_with(answer, page.encode(), {"Cache-Control": "no-store"})
            else:
                self.stream(answer)
        finally:
            connection.close()

    def answer_with(self, answer: http.client.HTTPResponse, body: bytes, extra: Mapping[str, str]) -> None:
        self.send_response(answer.status, answer.reason)
        for key, value in answer.getheaders():
            if key.lower() not in HOP_BY_HOP | OWN_HEADERS | {"content-length", "cache-control", "etag", "last-modified"}:
                self.send_header(key, value)
        for key, value in {**extra, "Content-Length": str(len(body))}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def stream(self, answer: http.client.HTTPResponse) -> None:
        self.send_response(answer.status, answer.reason)
        for key, value in answer.getheaders():
            if key.lower() not in HOP_BY_HOP | OWN_HEADERS:
                self.send_header(key, value)
        self.end_headers()
        if self.command == "HEAD":
            return
        while block := answer.read1(BLOCK):
            self.wfile.write(block)
            self.wfile.flush()  # a streamed answer (server-sent events) reaches the browser as it comes

    def log_message(self, format: str, *args) -> None:
        pass  # one line per request would fill the log `nerplat ui` keeps for errors


class FrontServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, upstream: UpstreamServer):
        super().__init__(("127.0.0.1", port), FrontHandler)
        self.upstream = upstream


def main(argv: list[str]) -> None:
    upstream_url, port = argv
    with FrontServer(int(port), UpstreamServer(upstream_url)) as front:
        front.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
