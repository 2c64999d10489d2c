"""deskbox.provider.credentials: the session's token reaches the session's origin through
desktop-env's own `requests` calls, and nothing else (local HTTP servers here)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from deskbox.provider import credentials


class Recorder(BaseHTTPRequestHandler):
    seen: list[tuple[int, str | None]] = []
    redirect_to: str | None = None

    def do_GET(self):  # noqa: N802
        Recorder.seen.append((self.server.server_port, self.headers.get("Authorization")))
        if self.path == "/redirect" and Recorder.redirect_to:
            self.send_response(302)
            self.send_header("Location", Recorder.redirect_to)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture
def servers():
    made = [ThreadingHTTPServer(("127.0.0.1", 0), Recorder) for _ in range(2)]
    for server in made:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    Recorder.seen = []
    yield [f"http://127.0.0.1:{s.server_port}" for s in made], [s.server_port for s in made]
    for server in made:
        server.shutdown()


def test_the_token_goes_to_the_sessions_origin_only_and_not_across_a_redirect(servers):
    (session, other), (session_port, other_port) = servers
    credentials.authorize(session + "/", "s3cret")
    try:
        requests.get(session + "/screenshot", timeout=5)
        requests.get(other + "/file.zip", timeout=5)
        requests.get(session + "/x", headers={"Authorization": "Bearer theirs"}, timeout=5)
        Recorder.redirect_to = other + "/elsewhere"
        requests.get(session + "/redirect", timeout=5)
    finally:
        credentials.forget(session)
        Recorder.redirect_to = None
    requests.get(session + "/after", timeout=5)
    assert Recorder.seen == [
        (session_port, "Bearer s3cret"),
        (other_port, None),
        (session_port, "Bearer theirs"),
        (session_port, "Bearer s3cret"),
        (other_port, None),  # the redirect's target
        (session_port, None),  # forgotten
    ]
