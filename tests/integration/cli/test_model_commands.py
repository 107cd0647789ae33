"""`nerplat serve` of a registered model answers over HTTP on 127.0.0.1 like `nerplat predict` does."""

import json

import pytest
from host_load import scaled
from registered_tagger import NAME

from nerplat.serving.records import predict_records
from nerplat.loopback import free_port


@pytest.mark.slow
def test_serve_answers_an_http_request_on_loopback_with_spans(store):
    """`nerplat serve` of a registered model answers like `nerplat predict`; run in its own process group, stopped at the end."""
    import os
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    port = free_port()
    command = [sys.executable, "-m", "nerplat.cli", "serve", NAME, "--port", str(port), "--workdir", str(store.workdir)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + scaled(180)
        while True:
            assert server.poll() is None, server.stdout.read().decode(errors="replace")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2) as ping:
                    if ping.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the model server did not answer /ping in time"
            time.sleep(1)
        body = json.dumps({"dataframe_records": [{"text": "Peter Blackburn visited Brussels."}]}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/invocations", data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    [served] = answer["predictions"]
    [expected] = predict_records(store.bundle, [{"text": "Peter Blackburn visited Brussels."}])
    assert served["tags"] == expected["tags"] and served["words"] == expected["words"]
    # another process: other float sums, each rounded to 4 digits (one may round the other way)
    assert served["scores"] == pytest.approx(expected["scores"], abs=1.5e-4)

    def without_score(spans):
        return [{k: v for k, v in span.items() if k != "score"} for span in spans]

    assert without_score(served["spans"]) == without_score(expected["spans"])
