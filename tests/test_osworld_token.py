"""The OSWorld-compatible server with a token set (`DESKBOX_TOKEN`): every route but health
asks for it, programs in the session reach the server with it, and a download a task
names carries neither the token nor a cookie to the host it fetches from."""

from __future__ import annotations

import json
import secrets

import pytest

from tests.support import LoopbackHTTP, Session, free_port, http
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


class HeaderRecorder(LoopbackHTTP):
    """A download host on loopback that keeps the headers of every request it gets and
    sets a cookie on each answer (so a client that kept cookies would send one back)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []

        def answer(_path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
            self.seen.append(headers)
            return 200, {"Set-Cookie": "host_session=abc; Path=/"}, b"a task's file\n"

        super().__init__(answer)


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
