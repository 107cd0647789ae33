"""Ports and answers on 127.0.0.1, against a real listening socket and a real HTTP server."""

import http.server
import socket
import threading

from nerplat.loopback import answers, free_port, port_in_use


def test_a_free_port_is_free_until_something_listens_on_it():
    port = free_port()
    assert not port_in_use(port)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        assert port_in_use(port)


def test_free_port_never_hands_out_the_same_port_twice():
    """Two servers started from one process each get their own port, though neither has bound it yet."""
    ports = [free_port() for _ in range(2000)]
    assert len(set(ports)) == len(ports)


class _Ping(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/ping" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_answers_is_true_only_for_an_http_200():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Ping)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        assert answers(f"http://127.0.0.1:{port}/ping")
        assert not answers(f"http://127.0.0.1:{port}/other")  # a 404
    finally:
        server.shutdown()
        server.server_close()
    assert not answers(f"http://127.0.0.1:{port}/ping", timeout=0.5)  # nothing listens any more
