"""`make container-test`: runs the deskbox image as a user would and drives the session
only through its published ports.

    python3 tests/container/drive.py [--image deskbox] [--keep]

Checks, in order: the three services answer health on their published ports (and the
image's HEALTHCHECK passes) without revealing the token; every other endpoint answers
401 without the token or with a wrong one; a screenshot is a PNG of the size given to
--output; a page's button, clicked by its Scene id, changes its own label from a trusted
click handler (so the click landed on it, page-side); text typed into a field by its
Scene id comes back as the field's value in the Scene; Chromium's DevTools port is not
reachable as published, only through the opt-in relay. A second container in OSWorld
mode answers OSWorld's API on its published port 5000 (token required; python with the
pyautogui shim, socat and wf-recorder inside; Chrome in /accessibility). Then
deploy/deskbox.yaml runs
under `podman kube play` (on free host ports, with a token from a podman secret) and must
become healthy and refuse a request without the token. What it started is always removed.

Only the standard library is used, so this runs with any Python 3.11.
Not collected by pytest (its name does not start with test_): it needs podman.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import secrets
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = (1280, 800)
TYPED = "héllo wörld ✓ 42"

# The page records on itself, where the Scene can read it back: the button relabels
# itself only when a trusted (real input, not scripted) click reaches it.
PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>deskbox container test</title>
<style>body{font:20px sans-serif;margin:40px} button,input{font:inherit;padding:12px;margin:20px}</style>
</head><body>
<button id="target" onclick="if(event.isTrusted){this.textContent='Clicked '+(++window.clicks);
document.title='clicked'}">Click me</button>
<input id="name" aria-label="Your name" size="30">
<script>window.clicks=0</script>
</body></html>"""


class CheckFailed(Exception):
    pass


class Passed:
    """What a container check has passed so far, each said as it passes (the image
    checks of this folder share it)."""

    def __init__(self) -> None:
        self.passed: list[str] = []

    def ok(self, what: str) -> None:
        self.passed.append(what)
        print(f"ok    {what}", flush=True)


def run_parts(parts: list, catch: tuple[type[BaseException], ...] = (CheckFailed,)) -> str | None:
    """Each ``(name, part)`` in order until one raises one of ``catch``: that failure,
    said on stderr, or None when every part passed."""
    for name, part in parts:
        try:
            part()
        except catch as exc:
            failed = f"{name}: {exc}" if isinstance(exc, CheckFailed) else f"{name}: {type(exc).__name__}: {exc}"
            print(f"FAIL  {failed}", file=sys.stderr, flush=True)
            return failed
    return None


class Http:
    def __init__(self, token: str | None) -> None:
        self.token = token

    def request(self, method: str, url: str, body: Any = None, *, token: str | None | bool = True,
                timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        bearer = self.token if token is True else (token or None)
        if bearer:
            req.add_header("Authorization", f"Bearer {bearer}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()

    def json(self, method: str, url: str, body: Any = None, **kw: Any) -> Any:
        status, _, raw = self.request(method, url, body, **kw)
        if status != 200:
            raise CheckFailed(f"{method} {url} -> {status}: {raw[:300]!r}")
        return json.loads(raw)


def podman(*args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(["podman", *args], capture_output=True, text=True, env=env)
    if check and result.returncode != 0:
        raise CheckFailed(f"podman {' '.join(args[:3])} ... failed ({result.returncode}): {result.stderr.strip()}")
    return result


def machine_flags() -> list[str]:
    """What podman needs on this machine (another runtime, lowered ulimits), detected."""
    out = subprocess.run([str(ROOT / "scripts" / "container-flags")], capture_output=True, text=True)
    if out.returncode != 0:
        raise CheckFailed(f"podman cannot run containers here: {out.stderr.strip()}")
    return out.stdout.split()


def published(name: str) -> dict[int, int]:
    """Container port -> host port, as `podman port` reports them."""
    ports = {}
    for line in podman("port", name).stdout.splitlines():
        inner, _, outer = line.partition(" -> ")
        ports[int(inner.split("/")[0])] = int(outer.rsplit(":", 1)[1])
    return ports


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except (OSError, CheckFailed, ValueError) as exc:
            last = exc
        time.sleep(interval)
    raise CheckFailed(f"timed out after {timeout:.0f}s waiting for {what}" + (f" (last: {last})" if last else ""))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def containers_conf(flags: list[str]) -> str:
    """The machine's podman flags as a containers.conf: `podman kube play` takes no
    --runtime or --ulimit of its own."""
    runtime, ulimits = None, []
    for flag, value in zip(flags[::2], flags[1::2]):
        if flag == "--runtime":
            runtime = value
        elif flag == "--ulimit":
            ulimits.append(value)
    lines = ["[containers]", f"default_ulimits = {json.dumps(ulimits)}"]
    if runtime:
        lines += ["[engine]", f"runtime = {json.dumps(runtime)}"]
    return "\n".join(lines) + "\n"


def kube_play(image: str, flags: list[str], name: str) -> str:
    """deploy/deskbox.yaml as `podman kube play` runs it, with this test's names, image
    and free host ports; returns what it checked."""
    token = secrets.token_urlsafe(24)
    ports = {8000: free_port(), 8080: free_port(), 8122: free_port()}
    if "/" not in image.split(":")[0]:
        image = f"localhost/{image}"
    if ":" not in image.rsplit("/", 1)[-1]:
        image += ":latest"
    manifest = (ROOT / "deploy" / "deskbox.yaml").read_text()
    for inner, outer in ports.items():
        manifest = manifest.replace(f"hostPort: {inner},", f"hostPort: {outer},")
    manifest = (manifest.replace("name: deskbox-token", f"name: {name}-token")
                .replace("  name: deskbox\n", f"  name: {name}\n")
                .replace("image: localhost/deskbox:latest", f"image: {image}"))
    if manifest.count(name) < 3 or any(f"hostPort: {p}," not in manifest for p in ports.values()):
        raise CheckFailed("deploy/deskbox.yaml no longer has the names and hostPorts this test adapts")
    with tempfile.TemporaryDirectory(prefix="deskbox-kube-") as tmp:
        kube = Path(tmp) / "deskbox.yaml"
        kube.write_text(manifest)
        conf = Path(tmp) / "containers.conf"
        conf.write_text(containers_conf(flags))
        env = {**os.environ, "CONTAINERS_CONF": str(conf)}
        # podman's secretKeyRef reads a secret holding a JSON map of base64 values.
        secret = json.dumps({"token": base64.b64encode(token.encode()).decode()})
        subprocess.run(["podman", "secret", "create", f"{name}-token", "-"], input=secret, text=True,
                       capture_output=True, check=True)
        try:
            podman("kube", "play", str(kube), env=env)
            http = Http(token)
            desktopd = f"http://127.0.0.1:{ports[8080]}"
            health = [desktopd + "/api/v1/health", f"http://127.0.0.1:{ports[8000]}/api/v1/health",
                      f"http://127.0.0.1:{ports[8122]}/health"]
            started = time.monotonic()
            wait_until(lambda: all(http.request("GET", u, token=False, timeout=3)[0] == 200 for u in health), 120,
                       "the kube play session's health on its hostPorts")
            took = time.monotonic() - started
            status = http.request("GET", desktopd + "/api/v1/screenshot", token=False)[0]
            if status != 401:
                raise CheckFailed(f"kube play: a screenshot without the token -> {status}: the secret did not arrive")
            status, _, body = http.request("GET", desktopd + "/api/v1/screenshot")
            if status != 200 or png_size(body) != (1920, 1080):
                raise CheckFailed(f"kube play: a screenshot with the token -> {status}")
            probe = podman("healthcheck", "run", f"{name}-pod-0-session", check=False, env=env)
            if probe.returncode != 0:
                raise CheckFailed(f"kube play: the liveness probe failed: {probe.stdout.strip()}")
        except CheckFailed:
            logs = podman("logs", "--tail", "30", f"{name}-pod-0-session", check=False)
            print("--- kube play session logs ---\n" + (logs.stdout + logs.stderr).strip()[-4000:], file=sys.stderr)
            raise
        finally:
            podman("kube", "down", str(kube), check=False, env=env)
            podman("secret", "rm", f"{name}-token", check=False)
    return (f"podman kube play deploy/deskbox.yaml: healthy on its hostPorts in {took:.1f}s, its probe passes, "
            "401 without the token from the podman secret, a 1920x1080 screenshot with it")


def websocket_first_message(host: str, path: str, token: str) -> bytes:
    """A websocket opened by hand (this runs on Debian's python3, without a websocket
    package), and the payload of the first frame the server sends."""
    h, _, port = host.partition(":")
    key = base64.b64encode(secrets.token_bytes(16)).decode()
    with socket.create_connection((h, int(port)), timeout=20) as sock:
        sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                      f"Authorization: Bearer {token}\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                raise CheckFailed(f"the websocket closed during its handshake: {data[:200]!r}")
            data += chunk
        head, _, data = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise CheckFailed(f"no websocket: {head[:200]!r}")
        while len(data) < 2 or len(data) < 2 + (data[1] & 0x7F):
            data += sock.recv(4096)
        length = data[1] & 0x7F  # (a version string is short: no extended length, no mask)
        return data[2:2 + length]


def png_size(data: bytes) -> tuple[int, int]:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise CheckFailed(f"not a PNG: {data[:16]!r}")
    return struct.unpack(">II", data[16:24])


class Drive(Passed):
    def __init__(self, name: str, token: str) -> None:
        super().__init__()
        self.name = name
        self.token = token
        self.http = Http(token)
        ports = published(name)
        self.desktopd = f"http://127.0.0.1:{ports[8080]}"
        self.bridge = f"http://127.0.0.1:{ports[8122]}"
        self.scene = f"http://127.0.0.1:{ports[8000]}"
        self.view = f"http://127.0.0.1:{ports[8006]}"
        self.observer = f"http://127.0.0.1:{ports[5001]}"
        self.cdp_published = f"http://127.0.0.1:{ports[9222]}"
        self.cdp_relay = f"http://127.0.0.1:{ports[9223]}"

    # -- checks ----------------------------------------------------------------------

    def view_and_observer(self, timeout: float) -> None:
        """DESKBOX_VIEW=1 and DESKBOX_OBSERVER=1: the live view's page, noVNC's files and
        its VNC relay (wayvnc in the image), and OS Screen Observer's API, on their ports."""
        wait_until(lambda: self.http.request("GET", self.view + "/health", token=False, timeout=3)[0] == 200
                   and self.http.request("GET", self.observer + "/api/healthz", token=False, timeout=3)[0] == 200,
                   timeout, "the live view's and the observer API's health")
        if self.http.request("GET", self.view + "/api/status", token=False)[0] != 401:
            raise CheckFailed("the live view answered without the token")
        if self.http.request("GET", self.view + "/novnc/core/rfb.js", token=False)[0] != 200:
            raise CheckFailed("noVNC's client is not in the image (/usr/share/novnc)")
        first = websocket_first_message(self.view.replace("http://", ""), "/websockify?display=0", self.token)
        if first != b"RFB 003.008\n":
            raise CheckFailed(f"the VNC relay's first message: {first!r}")
        windows = self.http.json("GET", self.observer + "/api/windows")
        if not windows.get("count"):
            raise CheckFailed(f"the observer API lists no window: {windows}")
        self.ok("DESKBOX_VIEW=1: the live view asks for the token, serves noVNC, and its relay speaks VNC "
                f"(wayvnc); DESKBOX_OBSERVER=1: /api/windows lists {windows['count']} window(s)")

    def healthy(self, timeout: float) -> float:
        started = time.monotonic()
        urls = [self.desktopd + "/api/v1/health", self.scene + "/api/v1/health", self.bridge + "/health"]

        def all_up() -> bool:
            state = podman("inspect", "--format", "{{.State.Status}}", self.name).stdout.strip()
            if state not in ("running", "created", "configured"):
                raise SystemExit(self.fail(f"the container is {state}"))
            return all(self.http.request("GET", u, token=False, timeout=3)[0] == 200 for u in urls)

        wait_until(all_up, timeout, "desktopd, scene and bridge health on the published ports")
        self.ok(f"health: desktopd, scene and bridge answer 200 on published ports "
                f"({time.monotonic() - started:.1f}s after the container started)")
        for url in urls:
            status, _, body = self.http.request("GET", url, token=False)
            text = body.decode(errors="replace")
            leaks = [w for w in (self.token, "DESKBOX_TOKEN", "Authorization", "DBUS_SESSION_BUS_ADDRESS",
                                 "XDG_RUNTIME_DIR", "/tmp/deskbox-") if w in text]
            if leaks:
                raise CheckFailed(f"{url} reveals {leaks}: {text[:300]}")
        self.ok("health: open without the token, and no token, environment or session paths in it")
        # The check passes once deskbox up has written its state file, when every part it
        # runs is up: with the live view and the observer API, a moment after these three
        # answer (the image's HEALTHCHECK gives the session a 30 s start period).
        outcome: list[subprocess.CompletedProcess] = []

        def healthcheck_passes() -> bool:
            outcome[:] = [podman("healthcheck", "run", self.name, check=False)]
            return outcome[0].returncode == 0

        try:
            wait_until(healthcheck_passes, 30, "the image's HEALTHCHECK")
        except CheckFailed:
            result = outcome[-1]
            raise CheckFailed(f"the image's HEALTHCHECK failed: {result.stdout.strip()} {result.stderr.strip()}") from None
        self.ok("the image's HEALTHCHECK passes (podman healthcheck run)")
        return time.monotonic() - started

    def unauthorized(self) -> None:
        protected = [("GET", self.desktopd + "/api/v1/screenshot", None),
                     ("POST", self.desktopd + "/api/v1/pointer", {"action": "move", "x": 1, "y": 1}),
                     ("GET", self.scene + "/api/v1/scene", None),
                     ("POST", self.scene + "/api/v1/act", {"target": "a0-1", "action": "click"}),
                     ("GET", self.bridge + "/layout", None),
                     ("POST", self.bridge + "/navigate", {"url": "about:blank"})]
        for method, url, body in protected:
            for token in (False, self.token + "x"):
                status, headers, raw = self.http.request(method, url, body, token=token)
                if status != 401:
                    raise CheckFailed(f"{method} {url} with {'no' if token is False else 'a wrong'} token -> {status}")
                try:
                    error = json.loads(raw)["error"]
                except (ValueError, KeyError, TypeError):
                    raise CheckFailed(f"{method} {url} -> 401 without a JSON error: {raw[:200]!r}") from None
                if not error.get("code"):
                    raise CheckFailed(f"{method} {url} -> 401 without an error code: {error}")
        self.ok(f"401 with a JSON error on {len(protected)} endpoints of the three services, "
                "without the token and with a wrong one")

    def screenshot(self) -> None:
        status, headers, body = self.http.request("GET", self.desktopd + "/api/v1/screenshot")
        if status != 200:
            raise CheckFailed(f"screenshot -> {status}: {body[:200]!r}")
        size = png_size(body)
        if size != OUTPUT:
            raise CheckFailed(f"screenshot is {size[0]}x{size[1]}, the display was started as {OUTPUT[0]}x{OUTPUT[1]}")
        self.ok(f"screenshot: a {size[0]}x{size[1]} PNG ({len(body) // 1024} KB), the size given to --output")

    def _scene(self) -> dict:
        return self.http.json("GET", self.scene + "/api/v1/scene?mode=agent-turn")

    def _element(self, role: str, name: str) -> dict | None:
        return next((e for e in self._scene()["ax"]
                     if e["source"] == "cdp" and e["role"] == role and e["name"] == name and e["bbox"]), None)

    def click_by_id(self) -> None:
        url = "data:text/html;charset=utf-8," + urllib.parse.quote(PAGE)
        self.http.json("POST", self.bridge + "/navigate", {"url": url})
        button = wait_until(lambda: self._element("button", "Click me"), 60, "the test page's button in the Scene")
        receipt = self.http.json("POST", self.scene + "/api/v1/act", {"target": button["id"], "action": "click"})
        clicked = wait_until(lambda: self._element("button", "Clicked 1"), 20,
                             f"the button {button['id']} to relabel itself after the click (receipt {receipt})")
        if clicked["id"] != button["id"]:
            raise CheckFailed(f"the clicked button changed id: {button['id']} -> {clicked['id']}")
        tabs = self.http.json("GET", self.bridge + "/tabs")
        if not any(t.get("title") == "clicked" for t in tabs):
            raise CheckFailed(f"the page's title did not change: {[t.get('title') for t in tabs]}")
        self.ok(f"click by Scene id {button['id']} at {receipt.get('point')}: the page's own trusted "
                "click handler relabelled the button and retitled the page")

    def type_by_id(self) -> None:
        field = wait_until(lambda: self._element("textbox", "Your name"), 20, "the test page's field in the Scene")
        self.http.json("POST", self.scene + "/api/v1/act", {"target": field["id"], "action": "type", "text": TYPED})

        def typed() -> dict | None:
            e = self._element("textbox", "Your name")
            return e if e and e["value"] == TYPED else None

        try:
            wait_until(typed, 20, "the typed text as the field's value in the Scene")
        except CheckFailed:
            raise CheckFailed(f"the field {field['id']} holds {self._element('textbox', 'Your name')}, "
                              f"expected {TYPED!r}") from None
        self.ok(f"type by Scene id {field['id']}: the Scene reads {TYPED!r} back as the field's value")

    def cdp(self) -> None:
        try:
            status, _, _ = self.http.request("GET", self.cdp_published + "/json/version", token=False, timeout=5)
        except OSError:
            status = None
        if status == 200:
            raise CheckFailed("Chromium's DevTools answer on the published container port 9222; "
                              "they must stay on the container's loopback")
        version = self.http.json("GET", self.cdp_relay + "/json/version", token=False)
        if "Browser" not in version:
            raise CheckFailed(f"the CDP relay answered {version}")
        self.ok(f"CDP: not reachable as published; through the opt-in relay: {version['Browser']}")

    def fail(self, message: str) -> str:
        print(f"FAIL  {message}", file=sys.stderr, flush=True)
        logs = podman("logs", "--tail", "40", self.name, check=False)
        print("--- podman logs (last 40 lines) ---", file=sys.stderr)
        print((logs.stdout + logs.stderr).strip(), file=sys.stderr)
        session_logs = podman("exec", self.name, "sh", "-c",
                              "tail -n 15 /tmp/deskbox-*/logs/*.log 2>/dev/null", check=False)
        if session_logs.stdout.strip():
            print("--- session logs in the container ---", file=sys.stderr)
            print(session_logs.stdout.strip()[-6000:], file=sys.stderr)
        return message


def timezone_checks(http: "Http", base: str, scene: str) -> str:
    """The session's zone as OSWorld's task "set my time zone to UTC+0" meets it: not UTC+0
    at start, set with sudo as its tasks do, read by programs started afterwards and by
    ``timedatectl status`` (the line its metric reads), and back after a reset."""
    def run(command: str) -> dict:
        return http.json("POST", base + "/execute", {"command": command, "shell": True})

    def status_line() -> str:
        answer = run("timedatectl status")
        if answer.get("returncode") != 0:
            raise CheckFailed(f"timedatectl status: {answer}")
        return answer["output"].split("\n")[3]

    start = status_line()
    if "Europe/Berlin" not in start or start.endswith("+0000)"):
        raise CheckFailed(f"an OSWorld-mode container starts in {start.strip()!r}, not Europe/Berlin")
    plain = run("timedatectl set-timezone UTC")
    if plain.get("returncode") == 0:
        raise CheckFailed(f"timedatectl set-timezone without sudo was not refused: {plain}")
    done = run("echo password | sudo -S timedatectl set-timezone UTC")
    after = status_line()
    if done.get("returncode") != 0 or not after.endswith("+0000)"):
        raise CheckFailed(f"sudo timedatectl set-timezone UTC: {done}; then {after.strip()!r}")
    if run("date +%Z").get("output", "").strip() != "UTC":
        raise CheckFailed(f"a program started after the change does not follow it: {run('date +%Z')}")
    status, _, raw = http.request("POST", scene + "/api/v1/session/reset", {}, timeout=240)
    if status != 200 or "Europe/Berlin" not in status_line():
        raise CheckFailed(f"after a reset ({status}: {raw[:200]!r}) the zone is {status_line().strip()!r}")
    return ("the zone starts as Europe/Berlin, sudo timedatectl set-timezone UTC sets it (a plain user is "
            "refused) for timedatectl and date, and a reset puts it back")


def osworld(image: str, flags: list[str], timeout: float) -> str:
    """A second container in OSWorld mode (DESKBOX_OSWORLD_SERVER=1), driven as OSWorld's
    PythonController drives its VM: through the published port 5000 only. It is given no
    token: it makes one (it listens on 0.0.0.0) and prints it in its log, where this
    reads it."""
    name = f"deskbox-test-osworld-{os.getpid()}"
    podman("run", "-d", "--name", name, *flags, "-e", "DESKBOX_OSWORLD_SERVER=1",
           "-e", f"DESKBOX_OUTPUTS={OUTPUT[0]}x{OUTPUT[1]}", "-p", "127.0.0.1::5000", "-p", "127.0.0.1::8000",
           image)
    try:
        base = f"http://127.0.0.1:{published(name)[5000]}"
        scene = f"http://127.0.0.1:{published(name)[8000]}"
        http = Http(None)

        def up() -> bool:
            state = podman("inspect", "--format", "{{.State.Status}}", name).stdout.strip()
            if state not in ("running", "created", "configured"):
                raise CheckFailed(f"the OSWorld-mode container is {state}: "
                                  f"{podman('logs', '--tail', '30', name, check=False).stdout[-3000:]}")
            try:
                return http.request("GET", base + "/health", token=False, timeout=3)[0] == 200
            except OSError:
                return False

        wait_until(up, timeout, "the OSWorld server's health on its published port")
        status, _, _ = http.request("POST", base + "/execute", {"command": "true", "shell": True}, token=False)
        if status != 401:
            raise CheckFailed(f"/execute without the token -> {status}, not 401")
        logs = podman("logs", name, check=False)
        made = re.findall(r"Authorization: Bearer (\S+)", logs.stdout + logs.stderr)
        if len(made) != 1:
            raise CheckFailed(f"the container given no token printed {len(made)} tokens in its log, not one")
        http.token = made[0]
        status, _, body = http.request("GET", base + "/screenshot")
        if status != 200 or png_size(body) != OUTPUT:
            raise CheckFailed(f"/screenshot -> {status}, {body[:40]!r}")
        # What OSWorld's tasks run: python with pyautogui (the shim), socat, wf-recorder.
        code = "import pyautogui; w, h = pyautogui.size(); pyautogui.moveTo(w // 2, h // 2); print(w, h, *pyautogui.position())"
        result = http.json("POST", base + "/execute", {"command": ["python", "-c", code], "shell": False})
        expected = f"{OUTPUT[0]} {OUTPUT[1]} {OUTPUT[0] // 2} {OUTPUT[1] // 2}"
        if result.get("returncode") != 0 or result.get("output", "").strip() != expected:
            raise CheckFailed(f"pyautogui in the container: {result}, expected output {expected!r}")
        tools = http.json("POST", base + "/execute", {"command": "command -v socat wf-recorder", "shell": True})
        if tools.get("returncode") != 0:
            raise CheckFailed(f"socat or wf-recorder missing in the image: {tools}")
        tree = http.json("GET", base + "/accessibility")
        if 'name="Google Chrome"' not in tree.get("AT", ""):
            raise CheckFailed(f"/accessibility has no Google Chrome application: {tree.get('AT', '')[:300]!r}")
        zone = timezone_checks(http, base, scene)  # (its reset closes the browser, as OSWorld mode's do)
        return ("OSWorld mode, given no token: made one, printed it in its log, 401 without it; /screenshot a 1280x800 PNG; /execute runs "
                "python -c 'import pyautogui' (the shim: size and a move read back), socat and wf-recorder "
                f"are there; /accessibility lists Google Chrome; {zone}")
    finally:
        podman("rm", "-f", "-t", "5", name, check=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tests/container/drive.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", default="deskbox")
    p.add_argument("--keep", action="store_true", help="leave the container running at the end")
    p.add_argument("--timeout", type=float, default=120, help="seconds to wait for a healthy session")
    p.add_argument("--no-kube", action="store_true", help="leave out the podman kube play check")
    args = p.parse_args(argv)

    token = secrets.token_urlsafe(24)
    name = f"deskbox-test-{os.getpid()}"
    flags = machine_flags()
    print(f"container-test: {args.image} as {name}" + (f" (this machine needs: {' '.join(flags)})" if flags else ""))
    # The token comes from this process's environment (-e NAME), so it is not on a command line.
    env = {**os.environ, "DESKBOX_TOKEN": token}
    podman("run", "-d", "--name", name, *flags,
           "-e", "DESKBOX_TOKEN", "-e", f"DESKBOX_OUTPUTS={OUTPUT[0]}x{OUTPUT[1]}", "-e", "DESKBOX_CDP_EXPOSE=1",
           "-e", "DESKBOX_VIEW=1", "-e", "DESKBOX_OBSERVER=1",
           *(a for port in (8000, 8080, 8122, 9222, 9223, 8006, 5001) for a in ("-p", f"127.0.0.1::{port}")),
           args.image, env=env)
    drive = None
    failed = None
    try:
        drive = Drive(name, token)
        drive.healthy(args.timeout)
        drive.unauthorized()
        drive.screenshot()
        drive.click_by_id()
        drive.type_by_id()
        drive.cdp()
        drive.view_and_observer(args.timeout)
        if not args.keep:
            drive.ok(osworld(args.image, flags, args.timeout))
        if not args.no_kube and not args.keep:
            podman("rm", "-f", "-t", "5", name, check=False)
            drive.ok(kube_play(args.image, flags, name))
    except CheckFailed as exc:
        failed = str(exc)
        if drive is not None:
            drive.fail(failed)
        else:
            print(f"FAIL  {failed}", file=sys.stderr)
    except SystemExit as exc:
        failed = str(exc)
    finally:
        if args.keep:
            print(f"container-test: left {name} running (podman rm -f {name})")
        else:
            podman("rm", "-f", "-t", "5", name, check=False)
    passed = len(drive.passed) if drive else 0
    print(f"container-test: {passed} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
