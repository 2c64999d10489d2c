"""What a session runs, as the supervisor needs it: each child's command line,
environment, readiness and way of stopping (``SessionChildren.specs``), made from the
session's layout, what it learns while it runs, the environments of its programs and its
background, which it is given."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from aiohttp import ClientSession, ClientTimeout

from ..common.chromium import OSWORLD_DISABLED_FEATURES, chromium_argv, with_disabled_features
from ..common.logging import get_logger
from ..common.options import BUDGET_FLAGS
from ..common.paths import IMPORT_ROOT
from ..common.settings import env
from ..osworld import warm
from . import processes, readiness, xwayland
from .layout import Environments, Layout, Live
from .readiness import until_ready
from .supervisor import Child, ChildSpec
from .users import SYSTEM_PATH
from .wallpaper import Background

__all__ = ["SessionChildren"]

DBUS_DAEMON = "dbus-daemon"
ATSPI_BUS_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"

log = get_logger("deskbox.up")


class SessionChildren:
    """The children of one session: their specs, and what each one's readiness sets up
    (Sway's socket and Xwayland's display into ``live``, the background, the buses told
    of the display)."""

    def __init__(self, layout: Layout, live: Live, envs: Environments, background: Background) -> None:
        self.layout = layout
        self.options = layout.options
        self.live = live
        self.envs = envs
        self.background = background

    # -- readiness ------------------------------------------------------------------------

    async def _sway_ready(self, child: Child) -> None:
        assert child.proc is not None
        self.live.swaysock = await until_ready(child, "sway", self.layout.log("sway"),
                                               readiness.sway_sockets(self.layout.runtime, child.proc.pid))
        self.background.forget()
        await self.background.apply()
        await self._join_display()

    async def _join_display(self) -> None:
        """What apps started later need of this Sway (see ``xwayland``): its DISPLAY in
        the session's environment and the bus's, and the accessibility bus announced to
        X clients."""
        self.live.x_display = None
        if self.layout.x11:
            self.live.x_display = await xwayland.find_display(self.layout.runtime, lambda argv: self.envs.run(argv))
            if self.live.x_display is None:
                log.warning("Sway did not say its Xwayland DISPLAY: X11 apps will not start")
        await self._share_display()
        await self._announce_atspi_bus()

    async def _share_display(self) -> None:
        """The display variables for what the session bus starts (with Sway's readiness
        and the bus's own: either may come back without the other)."""
        if not self.live.swaysock:
            return
        values = {"WAYLAND_DISPLAY": "wayland-1"}
        if self.live.x_display:
            values["DISPLAY"] = self.live.x_display
        await xwayland.update_activation_env(self.layout.dbus_address, SYSTEM_PATH, values)

    async def _announce_atspi_bus(self) -> None:
        if not self.live.x_display:
            return
        address = await xwayland.atspi_bus_address(self.layout.dbus_address, SYSTEM_PATH)
        if address is None:
            return  # the accessibility bus is not up yet: its readiness does this
        if await self.envs.run(xwayland.set_atspi_bus_argv(address)) != 0:
            log.warning("AT_SPI_BUS not set on the X root window: Qt apps may miss the accessibility bus")

    async def _dbus_ready(self, child: Child) -> None:
        await until_ready(child, "dbus-daemon", self.layout.log("dbus"),
                          readiness.unix_socket_accepts(str(self.layout.runtime / "bus")), interval=0.02)
        await self._share_display()

    async def _atspi_ready(self, child: Child) -> None:
        await until_ready(child, "at-spi-bus-launcher", self.layout.log("atspi"),
                          readiness.atspi_enabled(self.layout.dbus_address, SYSTEM_PATH))
        await self._announce_atspi_bus()

    async def _http_ready(self, child: Child, url: str, what: str, *, any_status: bool = False) -> None:
        await until_ready(child, what, self.layout.log(what), readiness.http_answers(url, any_status=any_status))

    async def _chromium_ready(self, child: Child) -> None:
        await until_ready(child, "chromium", self.layout.log("chromium"),
                          readiness.chromium_has_a_page(self.options.cdp_port))

    # -- children -------------------------------------------------------------------------

    def _chromium_argv(self) -> list[str]:
        urls, self.live.next_pages = self.live.next_pages, None
        extra = (env("DESKBOX_CHROMIUM_FLAGS") or "").split()
        if self.options.osworld:
            extra = with_disabled_features(extra, OSWORLD_DISABLED_FEATURES)
        if urls is None:
            # Started again after it went on its own: the tabs it had, as the bridge last
            # saw them (Chrome's own session file lags behind by seconds).
            urls = self._last_tabs()
        return chromium_argv(self.layout.browser_binary, cdp_port=self.options.cdp_port,
                             user_data_dir=str(self.layout.profile_dir), wayland=True, extra_flags=extra,
                             urls=urls or [], window_size=self.layout.browser_window_size,
                             sandbox=self.layout.chromium_sandbox)

    async def _close_browser(self, child: Child) -> None:
        """Quit the browser as its menu does (Browser.close): it writes its profile out.
        Its tabs are noted first: closing them all is part of quitting, and the bridge
        would note that instead."""
        base = f"http://127.0.0.1:{self.options.cdp_port}"
        async with ClientSession(timeout=ClientTimeout(total=5)) as http:
            async with http.get(base + "/json/list") as resp:
                urls = [t["url"] for t in await resp.json() if t.get("type") == "page"
                        and not t.get("url", "").startswith(("chrome:", "devtools:", "chrome-untrusted:"))]
            if urls and self.live.next_pages is None:
                self.live.next_pages = urls
            async with http.get(base + "/json/version") as resp:
                ws_url = (await resp.json())["webSocketDebuggerUrl"]
            async with http.ws_connect(ws_url, max_msg_size=0) as ws:
                await ws.send_json({"id": 1, "method": "Browser.close"})
                await ws.receive(timeout=5)

    def _last_tabs(self) -> list[str]:
        try:
            urls = json.loads((self.layout.runtime / "tabs.json").read_text())
        except (OSError, ValueError):
            return list(self.layout.start_urls)
        return [u for u in urls if isinstance(u, str)] or list(self.layout.start_urls)

    def specs(self) -> list[ChildSpec]:
        lay, args, envs = self.layout, self.options, self.envs
        runtime, uid, gid = lay.runtime, lay.uid, lay.gid
        logs = runtime / "logs"
        home = str(lay.home)
        service = {"user": lay.service_uid, "group": gid if lay.service_uid is not None else None,
                   "cwd": str(IMPORT_ROOT), "env": envs.service}
        desktopd_url, scene_url = lay.url(args.desktopd_port), lay.url(args.scene_port)
        bridge_url = None if args.no_browser else lay.url(args.bridge_port)
        specs = [
            ChildSpec(
                name="dbus",
                argv=lambda: [DBUS_DAEMON, f"--config-file={runtime / 'dbus-session.conf'}", "--nofork",
                              "--nopidfile", f"--address={lay.dbus_address}"],
                env=envs.base, ready=self._dbus_ready, user=uid, group=gid, cwd=home,
                log_path=str(logs / "dbus.log"), hosts_apps=True,
            ),
            # at-spi-bus-launcher owns org.a11y.Bus and runs the accessibility bus (a second
            # dbus-daemon, at <runtime>/at-spi/bus) in its own process group.
            ChildSpec(
                name="atspi", argv=lambda: [ATSPI_BUS_LAUNCHER, "--launch-immediately"],
                env=envs.base, ready=self._atspi_ready, needs=("dbus",), user=uid, group=gid,
                cwd=home, log_path=str(logs / "atspi.log"),
            ),
            ChildSpec(
                name="sway", argv=lambda: ["sway", "--config", str(runtime / "sway.conf")],
                env=envs.sway, ready=self._sway_ready, user=uid, group=gid, cwd=home,
                log_path=str(logs / "sway.log"), hosts_apps=True, helpers=(xwayland.XWAYLAND, "swaybg"),
            ),
            ChildSpec(
                name="desktopd",
                argv=lambda: [sys.executable, "-m", "deskbox.desktopd", "--listen",
                              f"{args.host}:{args.desktopd_port}", "--gate", scene_url,
                              *(["--gate-required"] if self._policy_given else []), "--log-level", args.log_level],
                ready=lambda child: self._http_ready(child, desktopd_url + "/api/v1/health", "desktopd"),
                needs=("sway",), log_path=str(logs / "desktopd.log"), ports=(args.desktopd_port,),
                **{**service, "env": envs.gated},
            ),
        ]
        if not args.no_browser:
            profile = str(lay.profile_dir)
            specs += [
                ChildSpec(
                    name="chromium", argv=self._chromium_argv, env=envs.chromium, ready=self._chromium_ready,
                    # Chromium joins AT-SPI only at its start: a new accessibility bus needs a new Chromium.
                    needs=("sway", "dbus", "atspi"), user=uid, group=gid, cwd=home,
                    log_path=str(logs / "chromium.log"), ports=(args.cdp_port,),
                    # In OSWorld mode the task owns the browser's life: it ends it (`pkill chrome`)
                    # and starts it (`google-chrome ...`) itself; nothing restarts it behind its back.
                    restart="on-request" if args.osworld else "always", ask_to_stop=self._close_browser,
                    # Its crash handlers leave its process group: they name the profile folder.
                    after_stop=lambda: processes.end_mentioning(profile, uid=uid),
                ),
                ChildSpec(
                    name="bridge", argv=self._bridge_argv,
                    # It answers 503 while the browser is down: any answer means it is serving.
                    ready=lambda child: self._http_ready(child, f"{bridge_url}/health", "bridge", any_status=True),
                    log_path=str(logs / "bridge.log"), ports=(args.bridge_port,), **service,
                ),
            ]
        specs.append(
            ChildSpec(
                name="scene", argv=lambda: self._scene_argv(desktopd_url, bridge_url),
                ready=lambda child: self._http_ready(child, scene_url + "/api/v1/health", "scene"),
                # Its AT-SPI connection dies with the buses, so it restarts after them.
                needs=("desktopd", "dbus", "atspi"), log_path=str(logs / "scene.log"),
                ports=(args.scene_port,), **{**service, "env": envs.scene},
            )
        )
        if args.osworld:
            specs.append(
                ChildSpec(
                    name="osworld", argv=lambda: self._osworld_argv(desktopd_url, bridge_url),
                    # The session's own environment: the commands it runs are the session's programs.
                    # `python -m` from the folder holding the package finds the services.
                    env=envs.commanding,
                    ready=lambda child: self._http_ready(child, lay.url(args.osworld_port) + "/health", "osworld"),
                    # No restart with the others: it only calls them (HTTP, a fresh AT-SPI walker
                    # each time), and a restart would drop the debugging-port relays it keeps.
                    user=lay.service_uid, group=gid, cwd=str(IMPORT_ROOT),
                    log_path=str(logs / "osworld.log"), ports=(args.osworld_port,), hosts_apps=True,
                    # (its warm interpreter is its own: the commands it forks are the apps)
                    helpers=(warm.PROCESS_NAME,),
                )
            )
        if args.observer:
            specs.append(
                ChildSpec(
                    name="observer", argv=lambda: self._observer_argv(desktopd_url, bridge_url, scene_url),
                    ready=lambda child: self._http_ready(child, lay.url(args.observer_port) + "/api/healthz",
                                                         "observer"),
                    # It only calls the scene and desktopd over HTTP: nothing to restart it for.
                    log_path=str(logs / "observer.log"), ports=(args.observer_port,), **service,
                )
            )
        if args.view:
            specs.append(
                ChildSpec(
                    name="view", argv=lambda: [sys.executable, "-m", "deskbox.view", "--listen",
                                               f"{args.host}:{args.view_port}", "--desktopd", desktopd_url,
                                               "--runtime-dir", str(runtime), "--log-level", args.log_level],
                    ready=lambda child: self._http_ready(child, lay.url(args.view_port) + "/health", "view"),
                    # Its wayvnc servers capture Sway's outputs: they go and come back with it.
                    needs=("sway",), log_path=str(logs / "view.log"), ports=(args.view_port,), **service,
                )
            )
        return specs

    def _observer_argv(self, desktopd_url: str, bridge_url: str | None, scene_url: str) -> list[str]:
        argv = [sys.executable, "-m", "deskbox.observer", "--listen",
                f"{self.options.host}:{self.options.observer_port}", "--scene", scene_url, "--desktopd", desktopd_url]
        if bridge_url is not None:
            argv += ["--bridge", bridge_url]
        return [*argv, "--log-level", self.options.log_level]

    def _osworld_argv(self, desktopd_url: str, bridge_url: str | None) -> list[str]:
        argv = [sys.executable, "-m", "deskbox.osworld", "--listen", f"{self.options.host}:{self.options.osworld_port}",
                "--desktopd", desktopd_url, "--browser-name", self.options.osworld_browser_name,
                "--work-dir", str(self.layout.runtime / "osworld"), "--control", str(self.layout.control_socket)]
        if bridge_url is not None:
            argv += ["--bridge", bridge_url, "--cdp-port", str(self.options.cdp_port)]
        if not self.options.osworld_warm_python:
            argv.append("--cold-python")
        return [*argv, "--log-level", self.options.log_level]

    @property
    def _policy_given(self) -> bool:
        return bool(self.options.policy or self.options.budgets)

    def _scene_argv(self, desktopd_url: str, bridge_url: str | None) -> list[str]:
        lay = self.layout
        argv = [sys.executable, "-m", "deskbox.aggregator",
                "--listen", f"{self.options.host}:{self.options.scene_port}", "--desktopd", desktopd_url, "--control", str(lay.control_socket),
                "--ids-file", str(lay.runtime / "scene-ids.json")]
        if bridge_url is not None:
            argv += ["--bridge", bridge_url]
        if self.options.ocr != "off":
            argv += ["--ocr", self.options.ocr]
        if self.options.view:
            argv += ["--view", lay.url(self.options.view_port)]
        if lay.traces_dir is not None:
            argv += ["--traces", str(lay.traces_dir)]
        if self.options.trace:
            argv.append("--trace-at-start")
        if self.options.policy:
            argv += ["--policy", str(Path(self.options.policy).resolve())]
        for flag in BUDGET_FLAGS:
            if flag in self.options.budgets:
                argv += [f"--{flag.replace('_', '-')}", str(self.options.budgets[flag])]
        if self.options.vlm_url:
            argv += ["--vlm-url", self.options.vlm_url, "--vlm-model", self.options.vlm_model]
        return [*argv, "--log-level", self.options.log_level]

    def _bridge_argv(self) -> list[str]:
        return [sys.executable, "-m", "deskbox.bridge", "--attach", "--tabs-file", str(self.layout.runtime / "tabs.json"),
                "--listen", f"{self.options.host}:{self.options.bridge_port}",
                "--cdp-port", str(self.options.cdp_port), "--log-level", self.options.log_level]

