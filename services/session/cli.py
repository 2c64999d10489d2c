"""The `deskbox` command. `deskbox up` starts one desktop session and supervises it."""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aiohttp import ClientSession, ClientTimeout

from ..common.logging import configure_logging, get_logger
from .cursor import THEME_NAME, write_invisible_theme
from .outputs import OutputSpec, parse_output, sway_output_lines
from .supervisor import Child, ChildSpec, Supervisor

__all__ = ["main"]

log = get_logger("deskbox.up")

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SWAY_CONFIG = PROJECT_ROOT / "sway" / "config"
SESSION_USER = "deskbox"
READY_TIMEOUT = 30.0

BRIDGE_SCRIPT = PROJECT_ROOT / "chromium_with_api.py"


def _output_arg(text: str) -> OutputSpec:
    try:
        return parse_output(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deskbox", description="A desktop for AI agents, driven over HTTP.")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser(
        "up",
        help="start a session (headless Sway, Chromium, desktopd) and supervise it",
        description=(
            "Start one headless Wayland desktop session and supervise it in the foreground: "
            "Sway as an unprivileged user, Chromium on the start URLs and desktopd. A child that "
            "dies is restarted with backoff; SIGINT or SIGTERM stops everything."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    up.add_argument(
        "--output", action="append", type=_output_arg, metavar="WxH[@S]",
        help="a display: W x H device pixels (what its screenshots measure) at scale S (1 or 2). "
             "Repeat for more displays, placed left to right. Default: one 1920x1080 display",
    )
    up.add_argument("--url", action="append", metavar="URL",
                    help="a page Chromium opens at start (repeat for more tabs). Default: about:blank")
    up.add_argument("--no-browser", action="store_true", help="do not start Chromium")
    up.add_argument("--host", default=os.environ.get("DESKBOX_HOST", "127.0.0.1"),
                    help="address the HTTP services listen on")
    up.add_argument("--desktopd-port", type=int, default=int(os.environ.get("DESKTOPD_PORT", "8080")),
                    help="desktopd's port")
    up.add_argument("--bridge-port", type=int, default=int(os.environ.get("BRIDGE_PORT", "8122")),
                    help="the CDP bridge's port (chromium_with_api.py, which launches and relaunches Chromium)")
    up.add_argument("--cdp-port", type=int, default=int(os.environ.get("DESKBOX_CDP_PORT", "9222")),
                    help="Chromium's DevTools port, always on loopback")
    up.add_argument("--user", default=os.environ.get("DESKBOX_USER", SESSION_USER),
                    help="when started as root: the system user that runs the session (created if missing)")
    up.add_argument("--runtime-dir", default=None,
                    help="the session's private XDG_RUNTIME_DIR (default: a fresh folder in /tmp, removed at exit)")
    up.add_argument("--sway-config", default=str(DEFAULT_SWAY_CONFIG),
                    help="the base Sway configuration; output lines are appended to it")
    up.add_argument("--state-file", default=None,
                    help="write the session's endpoints, sockets and pids to this JSON file once it is up")
    up.add_argument("--chromium", default=os.environ.get("DESKBOX_CHROMIUM", "chromium"),
                    help="the Chromium executable")
    up.add_argument("--log-level", default=os.environ.get("DESKBOX_LOG_LEVEL", "info"))
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    configure_logging("deskbox", args.log_level)
    if args.command == "up":
        try:
            code = asyncio.run(Session(args).run())
        except SessionError as exc:
            print(f"deskbox: {exc}", file=sys.stderr)
            code = 1
        sys.exit(code)


class SessionError(Exception):
    pass


def ensure_user(name: str) -> pwd.struct_passwd:
    """The unprivileged account the session runs as; created as a system user if needed."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    home = f"/var/lib/{name}"
    result = subprocess.run(
        [useradd, "--system", "--create-home", "--home-dir", home, "--shell", "/usr/sbin/nologin", name],
        capture_output=True, text=True,
    )
    if result.returncode != 0 and "already exists" not in result.stderr:
        raise SessionError(f"cannot create user {name!r}: {result.stderr.strip()}")
    return pwd.getpwnam(name)


def _readable_by(path: Path, uid: int, gid: int) -> bool:
    """Whether ``uid`` can traverse to ``path`` (checks every parent's x bit)."""
    for part in [path, *path.parents]:
        try:
            st = part.stat()
        except OSError:
            return False
        if st.st_uid == uid:
            bit = 0o100
        elif st.st_gid == gid:
            bit = 0o010
        else:
            bit = 0o001
        if not st.st_mode & bit:
            return False
    return True


class Session:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.outputs: list[OutputSpec] = args.output or [OutputSpec(1920, 1080, 1.0)]
        self.urls: list[str] = args.url or ["about:blank"]
        self.runtime: Path | None = None
        self.created_runtime = False
        self.uid = os.getuid()
        self.gid = os.getgid()
        self.home = os.path.expanduser("~")
        self.service_uid: int | None = None
        self.swaysock: str | None = None

    # -- set-up ---------------------------------------------------------------------

    def _prepare(self) -> None:
        if os.geteuid() == 0:
            user = ensure_user(self.args.user)
            self.uid, self.gid, self.home = user.pw_uid, user.pw_gid, user.pw_dir
            if _readable_by(PROJECT_ROOT, self.uid, self.gid) and _readable_by(Path(sys.executable), self.uid, self.gid):
                self.service_uid = self.uid
            else:
                log.warning(
                    "the session user cannot read the project; desktopd runs as root",
                    user=self.args.user, project=str(PROJECT_ROOT),
                )
                self.service_uid = None
        else:
            self.service_uid = self.uid
        if self.args.runtime_dir:
            self.runtime = Path(self.args.runtime_dir)
            self.runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        else:
            self.runtime = Path(tempfile.mkdtemp(prefix="deskbox-"))
            self.created_runtime = True
        os.chmod(self.runtime, 0o700)
        os.chown(self.runtime, self.uid, self.gid) if os.geteuid() == 0 else None
        (self.runtime / "logs").mkdir(exist_ok=True)
        write_invisible_theme(self.runtime / "icons")
        # Chromium takes its cursor theme from GTK's settings, Sway from its seat config.
        for gtk in ("gtk-3.0", "gtk-4.0"):
            (self.runtime / "config" / gtk).mkdir(parents=True, exist_ok=True)
            (self.runtime / "config" / gtk / "settings.ini").write_text(
                f"[Settings]\ngtk-cursor-theme-name={THEME_NAME}\ngtk-cursor-theme-size=24\n"
            )
        base = Path(self.args.sway_config).read_text()
        lines = [base.rstrip(), "", "# generated by deskbox up", *sway_output_lines(self.outputs)]
        lines.append(f"seat seat0 xcursor_theme {THEME_NAME} 24")
        (self.runtime / "sway.conf").write_text("\n".join(lines) + "\n")
        if os.geteuid() == 0:
            for path in [self.runtime, *self.runtime.rglob("*")]:
                os.chown(path, self.uid, self.gid)

    def _base_env(self) -> dict[str, str]:
        assert self.runtime is not None
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": self.home,
            "USER": self.args.user if os.geteuid() == 0 else os.environ.get("USER", ""),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "XDG_RUNTIME_DIR": str(self.runtime),
            "XDG_CACHE_HOME": str(self.runtime / "cache"),
            "XDG_CONFIG_HOME": str(self.runtime / "config"),
            "XCURSOR_PATH": str(self.runtime / "icons"),
            "XCURSOR_THEME": THEME_NAME,
            "XCURSOR_SIZE": "24",
        }
        for key in ("DESKBOX_TOKEN", "DESKBOX_LOG_LEVEL", "DESKBOX_CHROMIUM_FLAGS", "TZ"):
            if key in os.environ:
                env[key] = os.environ[key]
        return env

    def _session_env(self) -> dict[str, str]:
        env = self._base_env()
        env["WAYLAND_DISPLAY"] = "wayland-1"
        if self.swaysock:
            env["SWAYSOCK"] = self.swaysock
        return env

    def _sway_env(self) -> dict[str, str]:
        env = self._base_env()
        env.update(
            WLR_BACKENDS="headless",
            WLR_RENDERER="pixman",
            WLR_LIBINPUT_NO_DEVICES="1",
            WLR_HEADLESS_OUTPUTS=str(len(self.outputs)),
        )
        return env

    async def _sway_ready(self, child: Child) -> None:
        assert self.runtime is not None and child.proc is not None
        deadline = time.monotonic() + READY_TIMEOUT
        pattern = str(self.runtime / f"sway-ipc.*.{child.proc.pid}.sock")
        while time.monotonic() < deadline:
            if child.proc.returncode is not None:
                raise SessionError(f"sway exited with {child.proc.returncode}; see {self.runtime}/logs/sway.log")
            socks = glob.glob(pattern)
            if socks and (self.runtime / "wayland-1").exists():
                self.swaysock = socks[0]
                return
            await asyncio.sleep(0.05)
        raise SessionError(f"sway did not come up within {READY_TIMEOUT}s; see {self.runtime}/logs/sway.log")

    async def _http_ready(self, child: Child, url: str, what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        async with ClientSession(timeout=ClientTimeout(total=2)) as http:
            while time.monotonic() < deadline:
                if child.proc is not None and child.proc.returncode is not None:
                    raise SessionError(f"{what} exited with {child.proc.returncode}; see {self.runtime}/logs/{what}.log")
                try:
                    async with http.get(url) as resp:
                        if resp.status == 200:
                            return
                except Exception:
                    pass
                await asyncio.sleep(0.1)
        raise SessionError(f"{what} did not answer {url} within {READY_TIMEOUT}s")

    def _specs(self) -> list[ChildSpec]:
        assert self.runtime is not None
        args = self.args
        logs = self.runtime / "logs"
        desktopd_url = f"http://{_url_host(args.host)}:{args.desktopd_port}"
        bridge_url = f"http://{_url_host(args.host)}:{args.bridge_port}"
        specs = [
            ChildSpec(
                name="sway",
                argv=lambda: ["sway", "--config", str(self.runtime / "sway.conf")],
                env=self._sway_env,
                ready=self._sway_ready,
                user=self.uid, group=self.gid, cwd=self.home,
                log_path=str(logs / "sway.log"),
            ),
            ChildSpec(
                name="desktopd",
                argv=lambda: [sys.executable, "-m", "services.desktopd", "--listen", f"{args.host}:{args.desktopd_port}",
                              "--log-level", args.log_level],
                env=self._service_env,
                ready=lambda child: self._http_ready(child, desktopd_url + "/api/v1/health", "desktopd"),
                needs=("sway",),
                user=self.service_uid, group=self.gid if self.service_uid is not None else None,
                cwd=str(PROJECT_ROOT),
                log_path=str(logs / "desktopd.log"),
            ),
        ]
        if not args.no_browser:
            specs.append(
                ChildSpec(
                    name="bridge",
                    argv=self._bridge_argv,
                    env=self._service_env,
                    ready=lambda child: self._http_ready(child, f"{bridge_url}/health", "bridge"),
                    needs=("sway",),
                    user=self.service_uid, group=self.gid if self.service_uid is not None else None,
                    cwd=str(PROJECT_ROOT),
                    log_path=str(logs / "bridge.log"),
                )
            )
        return specs

    def _service_env(self) -> dict[str, str]:
        env = self._session_env()
        env["PYTHONPATH"] = str(PROJECT_ROOT)
        if self.service_uid is None:
            env["HOME"] = os.path.expanduser("~root")
        return env

    def _bridge_argv(self) -> list[str]:
        assert self.runtime is not None
        return [
            sys.executable, str(BRIDGE_SCRIPT),
            "--listen", f"{self.args.host}:{self.args.bridge_port}",
            "--cdp-port", str(self.args.cdp_port),
            "--chromium", self.args.chromium,
            "--user-data-dir", str(self.runtime / "chromium-profile"),
            "--log-level", self.args.log_level,
            *self.urls,
        ]

    # -- run --------------------------------------------------------------------------

    async def run(self) -> int:
        self._prepare()
        supervisor = Supervisor(self._specs())
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, stop.set)
        try:
            starting = asyncio.create_task(supervisor.start_all())
            waiter = asyncio.create_task(stop.wait())
            done, _ = await asyncio.wait({starting, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if starting in done:
                starting.result()
                self._announce(supervisor)
                await waiter
            else:
                starting.cancel()
            log.info("stopping")
            return 0
        finally:
            await supervisor.stop_all()
            self._cleanup()

    def _announce(self, supervisor: Supervisor) -> None:
        args = self.args
        host = _url_host(args.host)
        state = {
            "desktopd": f"http://{host}:{args.desktopd_port}",
            "bridge": None if args.no_browser else f"http://{host}:{args.bridge_port}",
            "cdp": None if args.no_browser else f"http://127.0.0.1:{args.cdp_port}",
            "runtime_dir": str(self.runtime),
            "wayland_display": "wayland-1",
            "swaysock": self.swaysock,
            "outputs": [str(o) for o in self.outputs],
            "pids": {name: child.pid for name, child in supervisor.children.items()},
            "supervisor_pid": os.getpid(),
        }
        if args.state_file:
            tmp = Path(args.state_file + ".tmp")
            tmp.write_text(json.dumps(state, indent=2))
            tmp.replace(args.state_file)
        lines = [
            "deskbox is up",
            f"  desktopd   {state['desktopd']}   (GET /api/v1/health, /api/v1/screenshot, POST /api/v1/pointer ...)",
        ]
        if state["cdp"]:
            lines.append(f"  bridge     {state['bridge']}   (GET /layout, /tabs, /health)")
            lines.append(f"  chromium   CDP {state['cdp']}")
        for i, o in enumerate(self.outputs):
            lines.append(f"  display {i}  {o}")
        lines += [f"  runtime    {self.runtime}   (WAYLAND_DISPLAY=wayland-1, logs in logs/)", "Ctrl+C stops the session."]
        print("\n".join(lines), flush=True)

    def _cleanup(self) -> None:
        if self.runtime is not None and self.created_runtime:
            shutil.rmtree(self.runtime, ignore_errors=True)
        if self.args.state_file:
            try:
                os.unlink(self.args.state_file)
            except FileNotFoundError:
                pass


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if ":" in host:
        return f"[{host}]"
    return host


if __name__ == "__main__":
    main()
