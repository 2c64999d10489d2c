"""The OSWorld-compatible server with a token set (`DESKBOX_TOKEN`): every route but health
asks for it, programs in the session reach the server with it, and a download a task
names carries neither the token nor a cookie to the host it fetches from."""

from __future__ import annotations

import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support import Session, free_port, http
from tests.test_osworld import PNG, OsworldClient

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def with_token():
    token = secrets.token_hex(8)
    port = free_port()
    # A second OSWorld session beside the module's: /home/user is that one's, so this
    # one runs as another user (with /home/NAME).
    s = Session(["800x600"], browser=False, extra_env={"DESKBOX_TOKEN": token},
                extra_args=["--osworld", "--osworld-port", str(port), "--user", "osworld2"]).start()
    s.token = token  # type: ignore[attr-defined]
    yield s
    s.stop()


def test_with_a_token_set_every_route_but_health_asks_for_it(with_token):
    base = with_token.state["osworld"]
    assert http("GET", base + "/health").status == 200
    for method, path in (("GET", "/screenshot"), ("POST", "/execute"), ("POST", "/run_python"),
                         ("POST", "/setup/launch"), ("POST", "/file"), ("GET", "/accessibility")):
        resp = http(method, base + path, raw=b"{}", headers={"Content-Type": "application/json"})
        assert resp.status == 401 and resp.json()["error"]["code"] == "unauthorized", path
    client = OsworldClient(base, with_token.token)
    assert client.get("/screenshot").body[:8] == PNG
    assert client.execute(["id", "-u"])["output"].strip() != "0"
    # Programs in the session reach the server with the token they are given.
    # (this session has no browser: the server says so, after taking the token).
    done = client.execute(["google-chrome", "--remote-debugging-port=" + str(free_port())])
    assert done["returncode"] == 1 and "no browser" in done["error"], done


class HeaderRecorder:
    """A download host on loopback that keeps the headers of every request it gets and
    sets a cookie on each answer (so a client that kept cookies would send one back)."""

    def __init__(self) -> None:
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append({k.lower(): v for k, v in self.headers.items()})
                body = b"a task's file\n"
                self.send_response(200)
                self.send_header("Set-Cookie", "host_session=abc; Path=/")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_download_a_task_names_carries_no_token_and_no_cookie(with_token):
    client = OsworldClient(with_token.state["osworld"], with_token.token)
    host = HeaderRecorder()
    try:
        # By name as well as by address: a cookie jar keeps cookies of named hosts only.
        for n, url in enumerate((f"http://localhost:{host.server.server_port}/a.txt",
                                 f"http://127.0.0.1:{host.server.server_port}/b.txt",
                                 f"http://localhost:{host.server.server_port}/c.txt")):
            resp = client.post_json("/setup/download_file", {"url": url, "path": f"~/dl{n}.txt"})
            assert resp.status == 200, resp.body[:300]
        assert client.execute(["cat", "dl2.txt"])["output"] == "a task's file\n"
    finally:
        host.close()
    assert len(host.seen) == 3, host.seen
    for headers in host.seen:
        leaked = {k: v for k, v in headers.items() if k in ("authorization", "cookie", "proxy-authorization")}
        assert not leaked, f"the download host was sent {leaked}"
        assert with_token.token not in json.dumps(headers), headers
