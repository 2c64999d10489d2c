"""`make container-test`, second part: the session providers (deskbox/provider) against
the built image, as a harness uses them.

    .venv/bin/python tests/container/provider.py [--image deskbox] [--no-contexts] [--no-desktop-env]

(Kubernetes under podman kube play, and a run inside that cluster: tests/container/cluster.py.)

Checks, in order:

1. **podman back end**: an environment starts healthy; its OSWorld address string is
   ``127.0.0.1:server:chromium:vnc:vlc`` with the ports `podman port` reports, seven
   distinct host ports; scene, desktopd, bridge and OSWorld answer on theirs (the token
   required), and the Chrome-task port answers CDP once the task-style
   ``google-chrome --remote-debugging-port=1337`` + ``socat tcp-listen:9222`` run (8006
   and 8090 are published, reserved: nothing listens there yet); a reset answers
   healthy; a file made in ~ through OSWorld's /execute is in a named snapshot, gone
   after removal, back after reverting to the snapshot and gone after a reset to
   start; an unknown snapshot is refused; a second environment gets other ports; both
   go and no container is left.
2. **DesktopEnv** (OSWorld's desktop-env, unmodified, behind import stubs):
   ``register()`` then ``DesktopEnv(provider_name="deskbox")``; ``reset(task_config)``
   runs a task written here (a file, Chrome on 1337 with socat, a tab opened over the
   chromium port); ``step("pyautogui.click(10, 10)")``; ``evaluate()`` grades 1; the
   next ``reset(task_config)`` reverts through the provider (the session's reset, same
   container) and its grader sees the first task's file gone; ``close()`` leaves no
   container.
3. **Contexts**: two environments on one context at once, the second refused
   (ContextInUse) before it starts and, when that check is skipped, by the session
   itself; with persist, a cookie set over CDP in one session is there in the next.
Needs the image (scripts/container-build), podman, and the test venv (desktop-env,
playwright's Python driver; no browser download). Everything it starts is removed.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from drive import CheckFailed, Passed, wait_until  # noqa: E402  (this folder's: the image check's)

from deskbox.provider import (  # noqa: E402
    CONTAINER_PORTS,
    ContextInUse,
    Environment,
    EnvironmentSpec,
    SnapshotNotFound,
)
from deskbox.provider import podman as podman_backend  # noqa: E402
from deskbox.provider.podman import PodmanBackend  # noqa: E402

OUTPUT = (1280, 800)


def png_size(data: bytes) -> tuple[int, int]:
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise CheckFailed(f"not a PNG: {data[:16]!r}")
    return struct.unpack(">II", data[16:24])


def podman(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True)


def execute(env: Environment, command: str) -> dict:
    """OSWorld's /execute (a shell command line), as its SetupController sends it."""
    status, raw = env.request("POST", "osworld", "/execute", {"command": command, "shell": True}, timeout=60)
    if status != 200:
        raise CheckFailed(f"/execute {command!r} -> {status}: {raw[:300]!r}")
    return json.loads(raw)


def launch(env: Environment, command: list[str]) -> None:
    status, raw = env.request("POST", "osworld", "/setup/launch", {"command": command, "shell": False})
    if status != 200:
        raise CheckFailed(f"/setup/launch {command} -> {status}: {raw[:300]!r}")


def open_chrome_port(env: Environment) -> dict:
    """What OSWorld's Chrome tasks do: Chrome with DevTools on 1337, socat publishing it
    on 9222; then the published chromium port answers CDP."""
    launch(env, ["google-chrome", "--remote-debugging-port=1337"])
    launch(env, ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"])

    def version() -> dict | None:
        with urllib.request.urlopen(env.url("chromium") + "/json/version", timeout=5) as resp:
            return json.loads(resp.read())

    return wait_until(version, 60, "CDP on the published chromium port")


def local_image(image: str) -> str:
    """A tag as a pod names it: ``deskbox`` -> ``localhost/deskbox:latest``."""
    name = image if "/" in image.split(":")[0] else f"localhost/{image}"
    return name if ":" in name.rsplit("/", 1)[-1] else name + ":latest"


class Run(Passed):
    def __init__(self, image: str) -> None:
        super().__init__()
        self.image = image
        self.started: list[Environment] = []

    def track(self, env: Environment) -> Environment:
        self.started.append(env)
        return env

    def cleanup(self) -> None:
        for env in self.started:
            try:
                env.stop()
            except Exception as exc:  # keep removing the others
                print(f"cleanup: {env.name}: {exc}", file=sys.stderr)

    # -- 1. podman -------------------------------------------------------------------------

    def podman_backend(self, backend: PodmanBackend) -> None:
        token = secrets.token_urlsafe(24)
        spec = EnvironmentSpec(image=self.image, token=token, outputs=[f"{OUTPUT[0]}x{OUTPUT[1]}"])
        t0 = time.monotonic()
        a = self.track(backend.start(spec))
        self.ok(f"podman: {a.name} healthy in {time.monotonic() - t0:.1f}s (scene health and OSWorld /screenshot 200)")

        address = a.osworld_address()
        host, *ports = address.split(":")
        if host != "127.0.0.1" or [int(p) for p in ports] != [a.ports[s] for s in ("osworld", "chromium", "vnc", "vlc")]:
            raise CheckFailed(f"address {address!r} does not match the ports {a.ports}")
        reported = {}
        for line in podman("port", a.name).stdout.splitlines():
            inner, _, outer = line.partition(" -> ")
            reported[int(inner.split("/")[0])] = outer
        expected = {CONTAINER_PORTS[s]: f"127.0.0.1:{p}" for s, p in a.ports.items()}
        if reported != expected:
            raise CheckFailed(f"podman port says {reported}, the provider {expected}")
        if len(set(a.ports.values())) != len(CONTAINER_PORTS):
            raise CheckFailed(f"ports are not distinct: {a.ports}")
        self.ok(f"podman: address {address} (server:chromium:vnc:vlc), all 7 ports published on 127.0.0.1 "
                "as `podman port` reports them")

        for service, path in (("scene", "/api/v1/health"), ("desktopd", "/api/v1/health"), ("bridge", "/health")):
            status, _ = a.request("GET", service, path, token=False)
            if status != 200:
                raise CheckFailed(f"{service} health on {a.ports[service]} -> {status}")
        status, _ = a.request("GET", "osworld", "/screenshot", token=False)
        if status != 401:
            raise CheckFailed(f"OSWorld /screenshot without the token -> {status}, not 401")
        status, body = a.request("GET", "osworld", "/screenshot")
        if status != 200 or png_size(body) != OUTPUT:
            raise CheckFailed(f"OSWorld /screenshot with the token -> {status}")
        status, _ = a.request("GET", "desktopd", "/api/v1/screenshot")
        if status != 200:
            raise CheckFailed(f"desktopd screenshot -> {status}")
        version = open_chrome_port(a)
        self.ok(f"podman: scene, desktopd, bridge health 200; OSWorld /screenshot 401 without the token, a "
                f"{OUTPUT[0]}x{OUTPUT[1]} PNG with it; chromium port {a.ports['chromium']} answers CDP "
                f"({version.get('Browser')}) after the task-style google-chrome + socat; "
                f"8006/8090 published, reserved")

        done = a.reset()
        self.ok(f"podman: reset to start answers healthy in {done['reset_ms']:.0f} ms")

        marker = "~/provider-marker.txt"
        execute(a, f"echo snapshot-me > {marker}")
        a.snapshot("with-marker")
        if "with-marker" not in a.snapshots():
            raise CheckFailed(f"the snapshot is not listed: {a.snapshots()}")
        execute(a, f"rm {marker}")
        if execute(a, f"test -e {marker}")["returncode"] == 0:
            raise CheckFailed("the marker file is still there after rm")
        a.reset("with-marker")
        back = execute(a, f"cat {marker}")
        if back["returncode"] != 0 or back["output"].strip() != "snapshot-me":
            raise CheckFailed(f"after reverting to the snapshot the file is not back: {back}")
        a.reset()
        if execute(a, f"test -e {marker}")["returncode"] == 0:
            raise CheckFailed("after a reset to start the file made later is still there")
        self.ok("podman: a file made in ~ via /execute, saved in snapshot 'with-marker', removed, back after "
                "reset('with-marker'), gone after reset() to start")
        try:
            a.reset("never-saved")
        except SnapshotNotFound as exc:
            self.ok(f"podman: an unknown snapshot is refused: {str(exc)[:120]}")
        else:
            raise CheckFailed("a reset to an unknown snapshot was accepted")

        # The second is not in OSWorld mode: its user may not sudo, and the container has
        # every capability dropped but SYS_CHROOT and no-new-privileges (provider.podman.hardening).
        b = self.track(backend.start(EnvironmentSpec(image=self.image, outputs=["1024x768"], osworld=False)))
        shared = set(a.ports.values()) & set(b.ports.values())
        if shared:
            raise CheckFailed(f"two environments share host ports {shared}")
        self.ok(f"podman: a second environment {b.osworld_address()} shares no port with the first")
        probe = "echo password | sudo -S id -u; grep -E '^(NoNewPrivs|CapBnd):' /proc/self/status"
        hardened = podman("exec", b.name, "sh", "-c", probe)
        status = dict(line.split(":\t") for line in hardened.stdout.splitlines() if ":\t" in line)
        if "no new privileges" not in hardened.stderr or status.get("NoNewPrivs") != "1" \
                or int(status.get("CapBnd", "0"), 16) != 1 << 18:
            raise CheckFailed(f"the plain environment is not hardened: {hardened.stdout!r} {hardened.stderr[-300:]!r}")
        if b.request("GET", "desktopd", "/api/v1/screenshot")[0] != 200:
            raise CheckFailed("the hardened environment does not take a screenshot")
        self.ok("podman: outside OSWorld mode the container has no-new-privileges and only CAP_SYS_CHROOT "
                "(Chromium's sandbox): sudo is refused, the session works")
        for env in (a, b):
            env.stop()
        left = [n for n in (a.name, b.name) if podman("container", "exists", n).returncode == 0]
        if left:
            raise CheckFailed(f"containers left after stop(): {left}")
        self.ok("podman: stop() removed both containers")

    # -- 2. DesktopEnv ----------------------------------------------------------------------

    def desktop_env(self, backend: PodmanBackend) -> None:
        from tests.support.desktop_env import load

        load()  # stubs for desktop-env's heavy imports (metrics, pydrive, pandas)
        import desktop_env.evaluators.metrics as metrics

        def exact_match(result: Any, rules: dict) -> float:
            return float(result == rules["expected"])

        metrics.exact_match = exact_match
        from deskbox.provider import osworld

        osworld.register()
        from desktop_env.desktop_env import DesktopEnv

        page = "data:text/html,<title>provider check</title><h1>deskbox provider</h1>"
        first = {
            "id": "deskbox-provider-first",
            "instruction": "Leave a note in the home folder.",
            "config": [
                {"type": "execute", "parameters": {"command": ["bash", "-c", "echo ready > ~/task-note.txt"]}},
                {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
                {"type": "launch", "parameters": {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]}},
                {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [page]}},
            ],
            "evaluator": {"func": "exact_match",
                          "result": {"type": "vm_command_line", "command": ["cat", "/home/user/task-note.txt"]},
                          "expected": {"type": "rule", "rules": {"expected": "ready\n"}}},
        }
        second = {
            "id": "deskbox-provider-second",
            "instruction": "Nothing of the first task is left.",
            "config": [{"type": "execute", "parameters": {"command": ["true"]}}],
            "evaluator": {"func": "exact_match",
                          "result": {"type": "vm_command_line", "command": "test -e /home/user/task-note.txt; echo $?",
                                     "shell": True},
                          "expected": {"type": "rule", "rules": {"expected": "1\n"}}},
        }
        cache = tempfile.mkdtemp(prefix="deskbox-provider-cache-")
        env = None
        try:
            t0 = time.monotonic()
            env = DesktopEnv(provider_name="deskbox", path_to_vm=f"podman:{self.image}", action_space="pyautogui",
                             screen_size=OUTPUT, require_a11y_tree=False, cache_dir=cache)
            provider = env.provider
            if env.provider_name != "deskbox" or not isinstance(provider, osworld.DeskboxProvider):
                raise CheckFailed(f"DesktopEnv has provider {env.provider_name!r} {type(provider).__name__}")
            self.started.append(provider.environment)
            self.ok(f"DesktopEnv(provider_name='deskbox'): up in {time.monotonic() - t0:.1f}s at "
                    f"{env.vm_ip}:{env.server_port} (chromium {env.chromium_port}, vnc {env.vnc_port}, vlc {env.vlc_port})")
            obs = env.reset(task_config=first)
            if png_size(obs["screenshot"]) != OUTPUT:
                raise CheckFailed(f"the observation's screenshot is {png_size(obs['screenshot'])}")
            if not env.is_environment_used:
                raise CheckFailed("DesktopEnv did not count the task's setup as use")
            obs, reward, done, info = env.step("pyautogui.click(10, 10)", pause=0.5)
            where = env.controller.execute_python_command("print(pyautogui.position())")
            if not where or "10" not in where.get("output", ""):
                raise CheckFailed(f"the pointer is not at (10, 10) after the step: {where}")
            score = env.evaluate()
            if score != 1:
                raise CheckFailed(f"the first task graded {score}, not 1")
            self.ok(f"DesktopEnv: reset(task_config) ran execute, launch google-chrome + socat and chrome_open_tabs "
                    f"(over port {env.chromium_port}); step('pyautogui.click(10, 10)') moved the pointer; "
                    f"evaluate() = {score}")
            container = provider.environment.name
            t0 = time.monotonic()
            env.reset(task_config=second)
            took = time.monotonic() - t0
            if provider.resets != 1 or provider.recreated or provider.starts != 1:
                raise CheckFailed(f"the second reset did not revert by the session's reset: resets {provider.resets}, "
                                  f"recreated {provider.recreated}, starts {provider.starts}")
            if provider.environment.name != container:
                raise CheckFailed("the second reset changed the container")
            score = env.evaluate()
            if score != 1:
                raise CheckFailed(f"after the revert the first task's file is still there (graded {score})")
            self.ok(f"DesktopEnv: the next reset(task_config) reverted through the provider in {took:.1f}s "
                    f"(the session's reset, same container {container}); the first task's file is gone")
            self.osworld_steps(env)
            env.close()
            if podman("container", "exists", container).returncode == 0:
                raise CheckFailed(f"{container} is still there after close()")
            env = None
            self.ok("DesktopEnv: close() removed the container")
        finally:
            if env is not None:
                env.close()
            shutil.rmtree(cache, ignore_errors=True)

    def osworld_steps(self, env: Any) -> None:
        """The step types OSWorld's configs lean on, in the container through its
        published ports: a download to a relative path (the home), sudo with
        {CLIENT_PASSWORD}, open waiting for its window, and pkill chrome in a
        postconfig."""
        script = b"mkdir -p ~/Desktop && echo notes > ~/Desktop/notes.txt && pwd > ~/setup-ran.txt\n"

        class Script(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(script)))
                self.end_headers()
                self.wfile.write(script)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Script)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        # (The commands the OSWorld server runs have the session's token: the shims send it.)
        focused = ("python -c \"import json, os, urllib.request as u; t = json.load(u.urlopen(u.Request("
                   "os.environ['DESKBOX_DESKTOPD'] + '/api/v1/tree', headers={'Authorization': "
                   "'Bearer ' + os.environ['DESKBOX_TOKEN']}))); "
                   "print(any(w['focused'] and 'notes.txt' in (w['title'] or '') for w in t['windows']))\" > ~/focused.txt")

        def cat(path: str) -> dict:
            return {"type": "vm_command_line", "command": ["cat", path]}

        def rule(value: str) -> dict:
            return {"type": "rule", "rules": {"expected": value}}

        task = {
            "id": "deskbox-provider-osworld-steps",
            "instruction": "Run the setup script, then look at the notes.",
            "config": [
                {"type": "download", "parameters": {"files": [
                    {"url": f"http://127.0.0.1:{server.server_address[1]}/setup.sh", "path": "setup.sh"}]}},
                {"type": "execute", "parameters": {"command": "bash setup.sh", "shell": True}},
                {"type": "execute", "parameters": {
                    "command": "echo {CLIENT_PASSWORD} | sudo -S id -u > ~/sudo-uid.txt", "shell": True}},
                {"type": "open", "parameters": {"path": "/home/user/Desktop/notes.txt"}},
                {"type": "execute", "parameters": {"command": focused, "shell": True}},
                {"type": "activate_window", "parameters": {"window_name": "Google Chrome"}},
            ],
            "evaluator": {
                "postconfig": [{"type": "launch", "parameters": {"command": ["pkill", "chrome"]}},
                               {"type": "sleep", "parameters": {"seconds": 2}}],
                "func": ["exact_match"] * 4, "conj": "and",
                "result": [cat("/home/user/setup-ran.txt"), cat("/home/user/sudo-uid.txt"),
                           cat("/home/user/focused.txt"),
                           {"type": "vm_command_line", "command": "pgrep -x chrome > /dev/null; echo $?",
                            "shell": True}],
                "expected": [rule("/home/user\n"), rule("0\n"), rule("True\n"), rule("1\n")],
            },
        }
        try:
            env.reset(task_config=task)
            score = env.evaluate()
        finally:
            server.shutdown()
        if score != 1:
            raise CheckFailed(f"OSWorld's step types graded {score}, not 1")
        self.ok("DesktopEnv: a relative download ran from /home/user, sudo -S with {CLIENT_PASSWORD} gave uid 0, "
                "open returned with notes.txt's window focused, and a postconfig pkill chrome ended the browser")

    # -- 3. contexts --------------------------------------------------------------------------

    def contexts(self, backend: PodmanBackend) -> None:
        folder = tempfile.mkdtemp(prefix="deskbox-provider-contexts-", dir="/var/tmp")
        try:
            self._contexts(backend, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _contexts(self, backend: PodmanBackend, folder: str) -> None:
        spec = EnvironmentSpec(image=self.image, context="provider-test", context_persist=True, contexts_dir=folder,
                               outputs=["1024x768"])
        first = self.track(backend.start(spec))
        try:
            backend.start(spec)
        except ContextInUse as exc:
            self.ok(f"contexts: a second environment on the same context is refused: {exc}")
        else:
            raise CheckFailed("a second environment on a held context started")
        # Should two start at the same moment, the session itself refuses the second.
        held = podman_backend.context_held
        podman_backend.context_held = lambda *_: False
        try:
            backend.start(spec, timeout=120)
        except ContextInUse as exc:
            self.ok(f"contexts: past that check, the session itself refuses it: {str(exc)[:160]}")
        else:
            raise CheckFailed("the session started on a context another session holds")
        finally:
            podman_backend.context_held = held

        value = secrets.token_hex(8)
        self._set_cookie(first, value)
        exits = self._browser_exits(first)
        first.stop()
        second = self.track(backend.start(spec))
        found = self._cookie(second)
        if found == value:
            second.stop()
            self.ok("contexts: with persist, a cookie set over CDP in one session is there in the next session "
                    "on the same context")
            return
        # Tell the two ways this fails apart: is the context saved at all (a cookie old
        # enough for Chromium's own 30 s commit), or only the last seconds lost at the end?
        late = secrets.token_hex(8)
        self._set_cookie(second, late)
        time.sleep(35)
        second.stop()
        third = self.track(backend.start(spec))
        later = self._cookie(third)
        third.stop()
        if exits:
            raise CheckFailed(f"the cookie was lost, but the session's browser had exited by itself before the end "
                              f"(killed from outside the session?): {exits[-1][:300]}")
        if later == late:
            raise CheckFailed("a cookie set just before the session ended was not saved into the context, one "
                              "set 35 s before the end was: the session's browser stop does not make Chromium write "
                              "its cookies (they reach disk only on Chromium's 30 s commit)")
        raise CheckFailed(f"cookies do not persist through the context at all (got {found!r}, then {later!r})")

    @staticmethod
    def _connect(p: Any, env: Environment) -> Any:
        """connect_over_cdp with retries, as OSWorld's own steps do (the first try right
        after the task-style socat sometimes meets a reset connection). Never
        browser.close(): over CDP, Playwright closes the session's browser with it."""
        for attempt in range(15):
            try:
                return p.chromium.connect_over_cdp(env.url("chromium"))
            except Exception:
                if attempt == 14:
                    raise
                time.sleep(1)

    @staticmethod
    def _browser_exits(env: Environment) -> list[str]:
        """The session's log lines saying its browser exited on its own."""
        return [line for line in env.logs(400).splitlines() if '"child": "chromium"' in line and "exited" in line]

    def _set_cookie(self, env: Environment, value: str) -> None:
        from playwright.sync_api import sync_playwright

        open_chrome_port(env)
        with sync_playwright() as p:
            browser = self._connect(p, env)
            browser.contexts[0].add_cookies([{"name": "deskbox_probe", "value": value, "domain": "example.test",
                                              "path": "/", "expires": time.time() + 3600}])

    def _cookie(self, env: Environment) -> str | None:
        from playwright.sync_api import sync_playwright

        open_chrome_port(env)
        with sync_playwright() as p:
            browser = self._connect(p, env)
            cookies = [c for c in browser.contexts[0].cookies() if c["name"] == "deskbox_probe"]
        return cookies[0]["value"] if cookies else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tests/container/provider.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", default="deskbox")
    p.add_argument("--no-contexts", action="store_true", help="leave out the contexts part")
    p.add_argument("--no-desktop-env", action="store_true", help="leave out the DesktopEnv part")
    args = p.parse_args(argv)

    run = Run(args.image)
    backend = PodmanBackend(name_prefix=f"deskbox-provider-test-{os.getpid()}-")
    print(f"provider-test: {args.image}" + (f" (podman flags: {' '.join(backend.flags)})" if backend.flags else ""))
    failed = None
    parts: list[tuple[str, Callable[[], None]]] = [("podman", lambda: run.podman_backend(backend))]
    if not args.no_desktop_env:
        parts.append(("DesktopEnv", lambda: run.desktop_env(backend)))
    if not args.no_contexts:
        parts.append(("contexts", lambda: run.contexts(backend)))
    try:
        for name, part in parts:
            try:
                part()
            except Exception as exc:
                failed = f"{name}: {type(exc).__name__}: {exc}"
                print(f"FAIL  {failed}", file=sys.stderr, flush=True)
                if not isinstance(exc, CheckFailed):
                    traceback.print_exc()
                for env in run.started:
                    if not env.stopped:
                        print(f"--- {env.name} log ---\n{env.logs(30)[-3000:]}", file=sys.stderr)
                break
    finally:
        run.cleanup()
        left = backend.cleanup(owner_pid=os.getpid())
        if left:
            print(f"provider-test: removed leftovers {left}", file=sys.stderr)
    print(f"provider-test: {len(run.passed)} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
