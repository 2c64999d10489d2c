"""`make container-test-apps`: the apps image in OSWorld mode, driven only through its
published ports, as a benchmark harness drives it.

    .venv/bin/python tests/container/apps.py [--image deskbox-apps]

Checks: a spreadsheet uploaded with /setup/upload opens in Calc with /setup/open_file;
its cells' values are in the Scene; a value typed into a cell by its Scene id is in the
Scene; the file saved with ctrl+s (and the dialog's "Use Excel 2007-365!" button
clicked by id) comes back through /file with the value in it, read with openpyxl as
OSWorld's graders read it; VLC's HTTP status answers on the published VLC port with
OSWorld's password; GIMP's window is in the Scene. What it started is always removed.

Needs the project's venv (openpyxl). Not collected by pytest: it needs podman.
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import secrets
import sys
import time
import urllib.parse
import urllib.request

from drive import CheckFailed, Http, machine_flags, podman, published, wait_until

HOME = "/home/user"


def xlsx() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Data"
    for row in range(1, 11):
        for col in range(1, 4):
            sheet.cell(row=row, column=col, value=row * col)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


class Apps:
    def __init__(self, name: str, token: str) -> None:
        ports = published(name)
        self.osworld = f"http://127.0.0.1:{ports[5000]}"
        self.scene = f"http://127.0.0.1:{ports[8000]}"
        self.desktopd = f"http://127.0.0.1:{ports[8080]}"
        self.vlc = f"http://127.0.0.1:{ports[8090]}"
        self.http = Http(token)
        self.token = token
        self.passed: list[str] = []

    def ok(self, what: str) -> None:
        self.passed.append(what)
        print(f"ok    {what}")

    def elements(self) -> list[dict]:
        return self.http.json("GET", self.scene + "/api/v1/scene?mode=agent-turn")["ax"]

    def element(self, role: str, name: str, timeout: float = 90) -> dict:
        def find() -> dict | None:
            return next((e for e in self.elements() if e["role"] == role and e["name"] == name), None)
        return wait_until(find, timeout, f"{role} {name!r} in the Scene", interval=1)

    def upload(self, path: str, data: bytes) -> None:
        boundary = secrets.token_hex(8)
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file_path\"\r\n\r\n{path}\r\n"
                f"--{boundary}\r\nContent-Disposition: form-data; name=\"file_data\"; filename=\"f\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        req = urllib.request.Request(self.osworld + "/setup/upload", data=body, method="POST", headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}", "Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            if resp.status != 200:
                raise CheckFailed(f"/setup/upload -> {resp.status}")

    def launch(self, program: str) -> None:
        status, _, raw = self.http.request("POST", self.osworld + "/setup/launch", {"command": [program]})
        if status != 200:
            raise CheckFailed(f"/setup/launch {program} -> {status}: {raw[:300]!r}")

    def calc(self) -> None:
        path = f"{HOME}/Desktop/numbers.xlsx"
        self.upload(path, xlsx())
        status, _, raw = self.http.request("POST", self.osworld + "/setup/open_file", {"path": path}, timeout=150)
        if status != 200:
            raise CheckFailed(f"/setup/open_file -> {status}: {raw[:300]!r}")
        b2 = self.element("cell", "B2")
        if b2["value"] != "4":
            raise CheckFailed(f"B2 in the Scene: {b2}")
        self.ok("a .xlsx opened with /setup/open_file is in Calc, its cells' values in the Scene (B2 = 4)")
        c3 = self.element("cell", "C3")
        self.http.json("POST", self.scene + "/api/v1/act", {"target": c3["id"], "action": "type", "text": "777\n"})
        wait_until(lambda: any(e["id"] == c3["id"] and e["value"] == "777" for e in self.elements()), 30,
                   "C3 reading 777 in the Scene", interval=1)
        self.ok("777 typed into C3 by its Scene id reads back from the Scene")
        self.http.json("POST", self.desktopd + "/api/v1/keyboard", {"action": "key", "keys": "ctrl+s"})
        keep = wait_until(lambda: next((e for e in self.elements() if e["role"] == "button"
                                        and e["name"].startswith("Use Excel")), None), 30,
                          "the Keep Current Format dialog's Use Excel button", interval=1)
        self.http.json("POST", self.scene + "/api/v1/act", {"target": keep["id"], "action": "click"})

        def saved_value() -> object:
            # OSWorld's /file takes a form, as its PythonController sends it.
            req = urllib.request.Request(self.osworld + "/file", data=urllib.parse.urlencode({"file_path": path}).encode(),
                                         method="POST", headers={"Authorization": f"Bearer {self.token}"})
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
            from openpyxl import load_workbook

            try:
                return load_workbook(io.BytesIO(raw))["Data"]["C3"].value == 777
            except Exception:
                return None
        wait_until(saved_value, 30, "C3 = 777 in the saved .xlsx fetched through /file", interval=1)
        self.ok("saved with ctrl+s and the format dialog's button clicked by id: /file gives the .xlsx, "
                "and openpyxl reads C3 = 777")

    def vlc_and_gimp(self) -> None:
        self.launch("vlc")
        request = urllib.request.Request(self.vlc + "/requests/status.xml", headers={
            "Authorization": "Basic " + base64.b64encode(b":password").decode()})

        def status() -> bytes | None:
            with urllib.request.urlopen(request, timeout=5) as reply:
                return reply.read()
        body = wait_until(status, 60, "VLC's /requests/status.xml on the published VLC port", interval=1)
        if b"<state>" not in body:
            raise CheckFailed(f"VLC's status: {body[:200]!r}")
        self.ok("VLC's HTTP status answers on the published VLC port with OSWorld's password")
        self.launch("gimp")
        self.element("menu", "Edit", timeout=120)
        self.ok("GIMP (Xwayland) and its Edit menu are in the Scene")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tests/container/apps.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", default="deskbox-apps")
    p.add_argument("--timeout", type=float, default=180, help="seconds to wait for a healthy session")
    args = p.parse_args(argv)
    token = secrets.token_urlsafe(24)
    name = f"deskbox-test-apps-{os.getpid()}"
    flags = machine_flags()
    env = {**os.environ, "DESKBOX_TOKEN": token}
    started = time.monotonic()
    podman("run", "-d", "--name", name, *flags, "-e", "DESKBOX_TOKEN", "-e", "DESKBOX_OSWORLD_SERVER=1",
           "-e", "DESKBOX_OUTPUTS=1920x1080",
           *(a for port in (5000, 8000, 8080, 8090) for a in ("-p", f"127.0.0.1::{port}")), args.image, env=env)
    apps = None
    failed = None
    try:
        apps = Apps(name, token)

        def healthy() -> bool:
            return (apps.http.request("GET", apps.osworld + "/health", token=False, timeout=3)[0] == 200
                    and apps.http.request("GET", apps.scene + "/api/v1/health", timeout=3)[0] == 200)
        wait_until(healthy, args.timeout, "the apps container's OSWorld server and scene")
        apps.ok(f"the apps image is healthy in OSWorld mode ({time.monotonic() - started:.1f} s)")
        apps.calc()
        apps.vlc_and_gimp()
    except CheckFailed as exc:
        failed = str(exc)
        print(f"FAIL  {failed}", file=sys.stderr)
        print(podman("logs", "--tail", "20", name, check=False).stdout[-2000:], file=sys.stderr)
    finally:
        podman("rm", "-f", "-t", "5", name, check=False)
    print(f"container-test-apps: {len(apps.passed) if apps else 0} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
