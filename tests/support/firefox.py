"""Debian's Firefox ESR driven over WebDriver BiDi (the W3C protocol Firefox serves on
``--remote-debugging-port``), for tests of the pages deskbox serves in a second engine.
Playwright drives only its own Firefox build, which no registry these machines reach
ships; the protocol needs nothing but a websocket.

Commands used: ``session.new``, ``session.subscribe`` (console errors),
``browsingContext.getTree`` / ``navigate``, ``script.evaluate`` and
``input.performActions`` (a real pointer move and real key presses)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

from . import free_port

__all__ = ["Firefox", "FIREFOX"]

FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox")


class BidiError(RuntimeError):
    pass


class Firefox:
    def __init__(self, width: int = 1500, height: int = 900) -> None:
        assert FIREFOX, "firefox-esr is not installed (scripts/install-deps installs it)"
        self.profile = Path(tempfile.mkdtemp(prefix="deskbox-firefox-"))
        (self.profile / "user.js").write_text(
            'user_pref("browser.shell.checkDefaultBrowser", false);\n'
            'user_pref("datareporting.policy.dataSubmissionEnabled", false);\n'
            'user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);\n'
            'user_pref("browser.startup.homepage_override.mstone", "ignore");\n')
        self.port = free_port()
        self.proc = subprocess.Popen(
            [FIREFOX, "--headless", "--no-remote", "--profile", str(self.profile),
             "--remote-debugging-port", str(self.port), f"--width={width}", f"--height={height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.errors: list[str] = []
        self._ids = iter(range(1, 1 << 30))
        self._stack = contextlib.ExitStack()
        deadline = time.monotonic() + 60
        while True:
            try:
                self.ws = self._stack.enter_context(
                    connect(f"ws://127.0.0.1:{self.port}/session", open_timeout=5, max_size=None))
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.call("session.new", capabilities={"alwaysMatch": {"acceptInsecureCerts": False}})
        self.call("session.subscribe", events=["log.entryAdded"])
        self.context = self.call("browsingContext.getTree")["contexts"][0]["context"]

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("type") == "event":
                entry = msg["params"]
                if msg["method"] == "log.entryAdded" and entry.get("level") == "error":
                    self.errors.append(entry.get("text") or "")
                continue
            if msg.get("id") != ident:
                continue
            if msg.get("type") == "error":
                raise BidiError(f"{method}: {msg.get('error')}: {msg.get('message')}")
            return msg["result"]

    def goto(self, url: str) -> None:
        self.call("browsingContext.navigate", context=self.context, url=url, wait="complete")

    def js(self, expression: str) -> Any:
        """The value of ``expression`` in the page (promises awaited), as JSON would have it."""
        out = self.call("script.evaluate", expression=f"(async () => JSON.stringify(await ({expression})))()",
                        target={"context": self.context}, awaitPromise=True, resultOwnership="none")
        if out.get("type") == "exception":
            raise BidiError(out["exceptionDetails"]["text"])
        value = out["result"].get("value")
        return None if value is None else json.loads(value)

    def wait(self, expression: str, timeout: float = 20) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting in Firefox for {expression}")
            time.sleep(0.1)

    def move(self, x: float, y: float) -> None:
        self.call("input.performActions", context=self.context, actions=[{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [{"type": "pointerMove", "x": round(x), "y": round(y), "duration": 0}]}])

    def type(self, text: str) -> None:
        keys = []
        for ch in text:
            keys += [{"type": "keyDown", "value": ch}, {"type": "keyUp", "value": ch}]
        self.call("input.performActions", context=self.context, actions=[{"type": "key", "id": "keyboard",
                                                                          "actions": keys}])

    def close(self) -> None:
        try:
            self._stack.close()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)  # (its content processes too)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
            shutil.rmtree(self.profile, ignore_errors=True)
