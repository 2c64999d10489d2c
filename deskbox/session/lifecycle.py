"""One session's life: who it runs as, its runtime folder and home, the processes that
make it up, the control socket, and the state file.

Children, in start order: a private D-Bus session bus (``dbus``), the AT-SPI bus
(``atspi``: at-spi-bus-launcher, with accessibility and screen reader switched on),
Sway, desktopd, Chromium (``chromium``), the CDP bridge (which attaches to it), the
scene aggregator and, with ``--osworld``, the OSWorld-compatible server (``osworld``).
Everything gets the same ``DBUS_SESSION_BUS_ADDRESS``, so native apps and Chromium
register with the one accessibility bus the aggregator reads.

``deskbox up`` is the session's child subreaper (see ``processes``): every process
started inside the session stays below it, and is ended at stop and at reset.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import secrets
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Callable

from ..common import timezone
from ..common.chromium import CODE_NAME, named_as, named_chrome, real_executable, sandbox_refused
from ..common.logging import get_logger
from ..common.paths import IMPORT_ROOT, PACKAGE_DIR
from ..common.settings import env
from ..osworld import vscode
from . import app_settings, default_apps, gnome_settings, login_dir, processes, users, wallpaper, xwayland
from .children import SessionChildren
from .contexts import ContextError
from .control import ControlServer
from .cursor import THEME_NAME, write_invisible_theme
from .errors import SessionError
from .home import MARKER, Home, HomeError
from .layout import PROFILES, Environments, Layout, Live
from .options import SESSION_USER, UpOptions
from .outputs import OutputSpec, sway_output_lines
from .state import SessionState, StateConfig
from .supervisor import Supervisor

__all__ = ["Session", "SessionError"]

log = get_logger("deskbox.up")

# OSWorld's VM user (OSWORLD_USER): its task configs name /home/user and run
# `echo password | sudo -S`.
OSWORLD_PASSWORD = "password"

SYSTEM_SESSION_BUS_CONFIG = "/usr/share/dbus-1/session.conf"
# The only keys of the session environment that go into the state file (never a token).
CLIENT_ENV_KEYS = (
    "HOME", "USER", "LOGNAME", "LANG", "PATH", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME",
    "XCURSOR_PATH", "XCURSOR_THEME", "XCURSOR_SIZE", "WAYLAND_DISPLAY", "SWAYSOCK",
    "DBUS_SESSION_BUS_ADDRESS", "QT_LINUX_ACCESSIBILITY_ALWAYS_ON", "DISPLAY", "GTK2_MODULES", "PYTHONPATH",
    "DESKBOX_DESKTOPD", "DESKBOX_OSWORLD",
)
# The dot files apps leave in a home after their first run (GIMP's ~/.config/GIMP/2.10),
# made by running them once at install (scripts/make-app-home); every session's home
# gets what it lacks of them, as a used machine's home has them.
APP_HOME = Path(sys.prefix) / "app-home"


class Session:
    """One session: prepares its user, folders and home (its ``Layout``), starts its
    children under a supervisor, serves its control socket, and undoes it all at the end."""

    def __init__(self, options: UpOptions) -> None:
        self.options = args = options
        self.outputs: list[OutputSpec] = list(args.output) or [OutputSpec(1920, 1080, 1.0)]
        self.urls: list[str] = list(args.url) or ["about:blank"]
        self.runtime: Path | None = None
        self.created_runtime = False
        self.login: login_dir.Claim | None = None  # /run/user/<uid>, a link to the runtime folder (--osworld)
        # Settled while preparing (see _prepare), then given to the session's parts as its Layout.
        self.uid = os.getuid()
        self.gid = os.getgid()
        self.user_name = pwd.getpwuid(self.uid).pw_name if self.uid else "root"
        self.home: Home | None = None
        self.keep_home = False
        self.service_uid: int | None = None
        self.x11 = False  # whether Sway runs Xwayland (see xwayland.py)
        self.dbus_address: str | None = None
        self.sudoers: Path | None = None
        self.browser_binary = args.chromium
        self.default_wallpaper: Path | None = None
        self.zone: tuple[Path, str] | None = None  # the link the zone is set through, and the start zone
        self.supervisor: Supervisor | None = None
        self.state: SessionState | None = None
        self.control: ControlServer | None = None
        # Made once prepared: what every part of the session is given.
        self.layout: Layout | None = None
        self.live = Live(next_pages=list(self.urls))
        self.envs: Environments | None = None
        self.background: wallpaper.Background | None = None
        self.stop_event = asyncio.Event()
        self.token = env("DESKBOX_TOKEN")
        # desktopd and the scene aggregator only: the scene's requests to desktopd carry
        # it, and desktopd's questions to the scene's gate do.
        self.internal_secret = secrets.token_urlsafe(24)
        self.traces_dir: Path | None = None

    # -- paths ----------------------------------------------------------------------------

    @property
    def runtime_seen(self) -> Path:
        """The runtime folder as the session's programs are told it: /run/user/<uid> when
        that is a link to it (``login_dir``), else the folder itself."""
        assert self.runtime is not None
        return self.login.path if self.login is not None else self.runtime

    # -- set-up ---------------------------------------------------------------------------

    def _check_leftovers(self) -> None:
        """Refuse to start over something that holds the session's ports (a session
        that did not end, or another program): say which."""
        ports = {"desktopd": self.options.desktopd_port, "scene": self.options.scene_port}
        if not self.options.no_browser:
            ports.update(bridge=self.options.bridge_port, chromium=self.options.cdp_port)
        if self.options.osworld:
            ports["osworld"] = self.options.osworld_port
        if self.options.observer:
            ports["observer"] = self.options.observer_port
        if self.options.view:
            ports["view"] = self.options.view_port
        busy = []
        for name, port in ports.items():
            held, pids = processes.listening_pids(port)
            if held:
                who = ", ".join(processes.describe(p) for p in pids) or "a process this user cannot see"
                busy.append(f"port {port} ({name}) is in use by {who}")
        if busy:
            raise SessionError("cannot start: " + "; ".join(busy))

    def _prepare_user(self) -> bool:
        """The session user; True when the home should be the user's own /home/NAME."""
        if os.geteuid() != 0:
            self.service_uid = self.uid
            return False
        osworld_style = self.options.osworld or self.options.user != SESSION_USER
        home = f"/home/{self.options.user}" if osworld_style else f"/var/lib/{self.options.user}"
        user, _ = users.ensure_user(self.options.user, home, system=not osworld_style)
        self.uid, self.gid, self.user_name = user.pw_uid, user.pw_gid, user.pw_name
        if self.uid == 0:
            raise SessionError("the session user must not be root")
        if users.readable_by(PACKAGE_DIR, self.uid, self.gid) and users.readable_by(Path(sys.executable), self.uid, self.gid):
            self.service_uid = self.uid
        else:
            log.warning("the session user cannot read deskbox's package; desktopd runs as root",
                        user=self.options.user, package=str(PACKAGE_DIR))
            self.service_uid = None
        return osworld_style and user.pw_dir.startswith("/home/")

    def _prepare_timezone(self) -> None:
        """The start zone (--timezone; OSWorld's default in OSWorld mode), set where the
        session owns its zone, and kept for resets to put back."""
        asked = self.options.timezone
        if asked and not timezone.known(asked):
            raise SessionError(f"--timezone {asked}: not a time zone of {timezone.ZONEINFO}")
        link = timezone.session_link()
        if link is None:
            if asked and timezone.zone_name() != asked:
                raise SessionError(f"--timezone {asked}: this session's zone is the machine's ({timezone.LOCALTIME}: "
                                   f"{timezone.zone_name()}); deskbox's images give a session a zone of its own")
            return
        wanted = asked or (timezone.OSWORLD_TIMEZONE if self.options.osworld else None)
        if wanted:
            timezone.point(link, wanted)
        self.zone = (link, timezone.zone_name() or "UTC")

    def _prepare_home(self, own_home: bool) -> None:
        assert self.runtime is not None
        snapshots = self.runtime / "snapshots"
        files: dict[str, str | bytes] = {
            # Chromium takes its cursor theme from GTK's settings, Sway from its seat config.
            ".config/gtk-3.0/settings.ini": f"[Settings]\ngtk-cursor-theme-name={THEME_NAME}\ngtk-cursor-theme-size=24\n",
            ".config/gtk-4.0/settings.ini": f"[Settings]\ngtk-cursor-theme-name={THEME_NAME}\ngtk-cursor-theme-size=24\n",
        }
        files.update(app_settings.home_files(
            vlc_http=(self.options.host, self.options.vlc_port) if self.options.osworld else None))
        if self.options.osworld:
            files.update(default_apps.home_files())
            files.update(app_settings.chrome_files(PROFILES[True]))
            # GNOME's settings as Ubuntu has them; the background, the picture shown at start.
            assert self.default_wallpaper is not None
            files.update(gnome_settings.home_files(self.runtime_seen / self.default_wallpaper.name))
        if self.options.home:
            path = Path(self.options.home).absolute()
            self.keep_home = True
        elif own_home:
            path = Path(pwd.getpwuid(self.uid).pw_dir)
        else:
            path = self.runtime / "home"
        self.home = Home(path, uid=self.uid, gid=self.gid, snapshots=snapshots)
        try:
            # Held before anything is written in it: a session still ending on it, or
            # another one using it, is never written over.
            self.home.lock()
            if own_home and not self.keep_home and (path / MARKER).exists():
                # A home deskbox made whose session did not end cleanly (it was killed):
                # its processes would write into the fresh one.
                left = processes.mentioning(f"HOME={path}\0")
                if left:
                    self.home.unlock()  # and leave it as it is
                    raise SessionError(f"processes of an earlier session still use {path}: "
                                       + ", ".join(processes.describe(p) for p in left[:5]) + "; end them first")
            if self.keep_home:
                if os.geteuid() == 0 and path.stat().st_uid != self.uid:
                    raise SessionError(f"--home {path} does not belong to the session user {self.options.user}")
                self.home.write_template(files)
            else:
                self.home.make_fresh(files, skel=Path("/etc/skel"))
            if APP_HOME.is_dir():
                self.home.add_missing(APP_HOME)
        except HomeError as exc:
            hint = "" if self.keep_home else (f"; pass --home {path} to use it as it is, or --user NAME for "
                                              "another session user")
            raise SessionError(f"{exc}{hint}") from None

    def _prepare_traces(self) -> None:
        """The folder traces are kept in (the scene aggregator writes them): --trace's,
        DESKBOX_TRACES, or the invoking user's state folder; as root, /var/lib/deskbox/traces.
        Made, and given to the user the services run as, who must be able to reach it."""
        if self.options.trace:
            path = Path(self.options.trace).absolute()
        elif env("DESKBOX_TRACES"):
            path = Path(env("DESKBOX_TRACES")).absolute()
        elif os.geteuid() == 0:
            path = Path("/var/lib/deskbox/traces")
        else:
            path = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local/state") / "deskbox/traces"
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        owner = self.service_uid if self.service_uid is not None else os.geteuid()
        if os.geteuid() == 0 and path.stat().st_uid != owner:
            os.chown(path, owner, self.gid if self.service_uid is not None else 0)
        if not users.readable_by(path, owner, self.gid):
            raise SessionError(f"the scene aggregator runs as uid {owner}, which cannot reach the trace folder "
                               f"{path}: choose one it can (under /var/tmp, or its own home)")
        self.traces_dir = path

    def _prepare(self) -> None:
        own_home = self._prepare_user()
        if self.options.osworld and not self.service_uid:
            # It runs whatever it is asked to: never as root.
            raise SessionError("--osworld needs a session user that is not root and can read deskbox's package "
                               f"({PACKAGE_DIR})")
        if self.options.runtime_dir:
            self.runtime = Path(self.options.runtime_dir)
            self.runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        else:
            self.runtime = Path(tempfile.mkdtemp(prefix="deskbox-"))
            self.created_runtime = True
        os.chmod(self.runtime, 0o700)
        for sub in ("logs", "cache", "bin"):
            (self.runtime / sub).mkdir(exist_ok=True)
        write_invisible_theme(self.runtime / "icons")
        first = self.outputs[0]
        self.default_wallpaper = wallpaper.write_default(self.runtime / "wallpaper.png", (first.width, first.height))
        base = Path(self.options.sway_config).read_text()
        lines = [base.rstrip(), "", "# generated by deskbox up", *sway_output_lines(self.outputs)]
        lines.append(f"seat seat0 xcursor_theme {THEME_NAME} 24")
        wanted = self.options.xwayland if self.options.xwayland is not None else self.options.osworld
        self.x11 = wanted and xwayland.available()
        if self.x11 and (problem := xwayland.socket_dir_problem(self.uid)):
            log.warning("Xwayland will not start: X11 apps will not run", problem=problem)
        lines.append(xwayland.sway_line(self.x11))
        (self.runtime / "sway.conf").write_text("\n".join(lines) + "\n")
        # The system's session-bus policy admits only the bus owner; root is let in too so
        # that a root deskbox (its readiness checks), a root desktopd/scene (when the session
        # user cannot read the project) and root test harnesses can use the bus.
        (self.runtime / "dbus-session.conf").write_text(
            '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"\n'
            ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n'
            "<busconfig>\n"
            f"  <include>{SYSTEM_SESSION_BUS_CONFIG}</include>\n"
            '  <policy context="default"><allow user="root"/></policy>\n'
            "</busconfig>\n"
        )
        if self.options.osworld:
            self.login = login_dir.claim(self.uid, self.runtime)
        self.dbus_address = f"unix:path={self.runtime_seen / 'bus'}"
        # Without this the bus would start an unsupervised at-spi-bus-launcher of its own
        # whenever a client asks for org.a11y.Bus while ours is down or restarting, and ours
        # would then lose the name. The session's folder is the first service folder searched.
        services = self.runtime / "dbus-1" / "services"
        services.mkdir(parents=True, exist_ok=True)
        (services / "org.a11y.Bus.service").write_text("[D-BUS Service]\nName=org.a11y.Bus\nExec=/bin/false\n")
        self.browser_binary = real_executable(self.options.chromium)
        if self.options.osworld:
            # OSWorld's tasks end the browser with `pkill chrome` / `killall chrome`: its
            # process must be called chrome.
            self.browser_binary, warning = named_chrome(self.browser_binary)
            if warning:
                log.warning(warning)
            if vscode.install_dir().is_dir():
                # VS Code's windows (deskbox.osworld.vscode) end on `pkill code`.
                _, warning = named_as(real_executable(self.options.chromium), CODE_NAME)
                if warning:
                    log.warning(warning)
        if self.options.osworld:
            users.write_osworld_bin(self.runtime / "bin", IMPORT_ROOT)
        if os.geteuid() == 0:
            for path in [self.runtime, *self.runtime.rglob("*")]:
                os.chown(path, self.uid, self.gid, follow_symlinks=False)
        self._prepare_home(own_home)
        self._prepare_timezone()
        self._prepare_traces()
        for user in users.revoke_leftovers():
            log.warning("put back the password and sudo of a session that died without its end", user=user)
        if self.options.sudo:
            self.sudoers = users.grant_sudo(self.user_name, OSWORLD_PASSWORD)
        assert self.home is not None
        refused = sandbox_refused((self.uid, self.gid))
        if refused:
            log.warning("Chromium runs without its sandbox (--no-sandbox): a renderer an exploit takes over "
                        "is then the session user", reason=refused)
        self.layout = Layout(
            options=self.options, runtime=self.runtime, runtime_seen=self.runtime_seen, home=self.home.path,
            uid=self.uid, gid=self.gid, user_name=self.user_name, service_uid=self.service_uid,
            dbus_address=self.dbus_address, x11=self.x11, browser_binary=self.browser_binary,
            headless_outputs=len(self.outputs),
            start_urls=tuple(self.urls), internal_secret=self.internal_secret, token=self.token,
            traces_dir=self.traces_dir, chromium_sandbox=refused is None,
            browser_window_size=self.outputs[0].logical_size)
        self.envs = Environments(self.layout, self.live)
        self.background = wallpaper.Background(self.layout.home, self.envs.run)

    # -- what the session's state asks of it (state.SessionActs) ------------------------

    async def apply_wallpaper(self) -> bool:
        assert self.background is not None
        return await self.background.apply()

    async def run_in_session(self, argv: list[str], *, timeout: float = 5.0) -> int | None:
        assert self.envs is not None
        return await self.envs.run(argv, timeout=timeout)

    def open_next(self, urls: list[str]) -> None:
        self.live.next_pages = list(urls)

    def _state_config(self) -> StateConfig:
        assert self.runtime is not None and self.layout is not None
        a = self.options
        return StateConfig(
            user_name=self.user_name, uid=self.uid, gid=self.gid, runtime=self.runtime,
            profile_dir=self.layout.profile_dir,
            outputs=[str(o) for o in self.outputs], start_urls=list(self.urls), osworld=bool(a.osworld),
            browser_at_reset=not a.osworld or bool(getattr(a, "osworld_browser_at_reset", False)),
            cdp_port=a.cdp_port, desktopd_url=self.layout.url(a.desktopd_port), token=self.token, ttl=a.ttl,
            context=a.context, context_persist=a.context_persist, contexts_dir=a.contexts_dir,
            default_wallpaper=self.default_wallpaper, zone=self.zone)

    # -- processes of the session ---------------------------------------------------------

    def app_pids(self) -> set[int]:
        """Every process of the session that is not deskbox's own: below ``deskbox up``
        (however it detached), or started from outside with the session's environment."""
        assert self.supervisor is not None and self.runtime is not None
        table = {p.pid: p for p in processes.process_table().values() if p.state not in ("Z", "X")}
        own = self.supervisor.own_pids()
        found = processes.descendants(os.getpid(), table) - own
        marks = [f"XDG_RUNTIME_DIR={path}".encode() for path in {self.runtime, self.runtime_seen}]
        for pid in table:
            if pid not in own and pid not in found and processes.environ_has(pid, marks):
                found.add(pid)
        return found

    # -- run ------------------------------------------------------------------------------

    async def run(self, announce: Callable[[dict], None]) -> int:
        self._check_leftovers()
        if not processes.become_subreaper():
            log.warning("cannot become the session's subreaper: detached processes may outlive it")
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stop_event.set)
        try:
            self._prepare()  # what it made goes again if the session cannot start
            assert self.layout is not None and self.envs is not None and self.background is not None
            children = SessionChildren(self.layout, self.live, self.envs, self.background)
            self.supervisor = Supervisor(children.specs())
            assert self.home is not None
            self.state = SessionState(self._state_config(), self.home, self.supervisor, self, self.stop_event)
            try:
                await self.state.save_start()
            except ContextError as exc:
                raise SessionError(str(exc)) from None
            self.control = ControlServer(self.state, self.layout.control_socket, self.uid, self.gid)
            await self.control.start()
            starting = asyncio.create_task(self.supervisor.start_all())
            waiter = asyncio.create_task(self.stop_event.wait())
            done, _ = await asyncio.wait({starting, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if starting not in done:
                starting.cancel()
                log.info("stopping")
                return 0
            starting.result()
            state = self.describe()
            self._write_state_file(state)
            announce(state)
            await self.state.wait_for_end()
            log.info("stopping")
            return 0
        finally:
            await self._shutdown()

    async def _shutdown(self) -> None:
        if self.control is not None:
            await self.control.close()
        if self.supervisor is not None:
            await self.supervisor.stop_all()
        if self.state is not None:
            await self.state.close()  # once the browser has flushed its profile
        if self.supervisor is not None:
            left = self.app_pids()
            if left:
                log.info("ending the session's processes", pids=sorted(left))
                await processes.end_processes(left, grace=2.0)
        if self.runtime is not None:
            # Whatever still names this session (started from outside it, as another user).
            await processes.end_mentioning(*{needle for path in (self.runtime, self.runtime_seen)
                                             for needle in (f"{path}/", f"XDG_RUNTIME_DIR={path}\0")})
        if self.login is not None and self.runtime is not None:
            login_dir.release(self.login, self.runtime)
        if self.sudoers is not None:
            users.revoke_sudo(self.user_name)  # (its password as it was, the sudoers entry gone)
        if self.home is not None:
            if not self.keep_home:
                self.home.remove()
            self.home.unlock()
        if self.runtime is not None and self.created_runtime:
            shutil.rmtree(self.runtime, ignore_errors=True)
        if self.options.state_file:
            try:
                os.unlink(self.options.state_file)
            except FileNotFoundError:
                pass

    def describe(self) -> dict:
        args, lay = self.options, self.layout
        assert self.supervisor is not None and lay is not None and self.envs is not None
        return {
            "desktopd": lay.url(args.desktopd_port),
            "bridge": None if args.no_browser else lay.url(args.bridge_port),
            "cdp": None if args.no_browser else f"http://127.0.0.1:{args.cdp_port}",
            "scene": lay.url(args.scene_port),
            "osworld": lay.url(args.osworld_port) if args.osworld else None,
            "observer": lay.url(args.observer_port) if args.observer else None,
            "view": lay.url(args.view_port) if args.view else None,
            "runtime_dir": str(self.runtime),
            "home": str(lay.home),
            "control_socket": str(lay.control_socket),
            "wayland_display": "wayland-1",
            "swaysock": self.live.swaysock,
            "x_display": self.live.x_display,
            "dbus_session_bus_address": self.dbus_address,
            # Who the session runs as and the environment its apps get: enough for a tool to
            # start a native app inside the session (as that user) and have it on AT-SPI.
            "user": {"uid": self.uid, "gid": self.gid, "name": self.user_name},
            "env": {k: v for k, v in self.envs.session().items() if k in CLIENT_ENV_KEYS},
            "outputs": [str(o) for o in self.outputs],
            "pids": {name: child.pid for name, child in self.supervisor.children.items()},
            "supervisor_pid": os.getpid(),
        }

    def _write_state_file(self, state: dict) -> None:
        if self.options.state_file:
            tmp = Path(self.options.state_file + ".tmp")
            tmp.write_text(json.dumps(state, indent=2))
            tmp.replace(self.options.state_file)
