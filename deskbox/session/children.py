"""What a session runs, as the supervisor needs it: each child's command line,
environment, readiness and way of stopping (``SessionChildren._specs``), for
``lifecycle.Session``, which keeps the session's folders, users and life."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import ClientSession, ClientTimeout

from ..common.chromium import chromium_argv
from ..common.logging import get_logger
from ..common.options import BUDGET_FLAGS, INTERNAL_SECRET_ENV, VLM_KEY_ENV
from ..common.paths import IMPORT_ROOT
from ..common.settings import env
from . import processes, readiness, xwayland
from .readiness import until_ready
from .supervisor import Child, ChildSpec
from .users import SYSTEM_PATH

if TYPE_CHECKING:
    pass

__all__ = ["SessionChildren"]

DBUS_DAEMON = "dbus-daemon"
ATSPI_BUS_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"

log = get_logger("deskbox.up")


class SessionChildren:
    """Mixed into ``Session``: everything here reads the session's own attributes."""

    # -- readiness ------------------------------------------------------------------------

    def _log(self, name: str) -> Path:
        assert self.runtime is not None
        return self.runtime / "logs" / f"{name}.log"

    async def _sway_ready(self, child: Child) -> None:
        assert self.runtime is not None and child.proc is not None
        self.swaysock = await until_ready(child, "sway", self._log("sway"),
                                          readiness.sway_sockets(self.runtime, child.proc.pid))
        self._wallpaper_shown = False  # a new Sway shows none yet
        await self.apply_wallpaper()
        await self._join_display()

    async def _join_display(self) -> None:
        """What apps started later need of this Sway (see ``xwayland``): its DISPLAY in
        the session's environment and the bus's, and the accessibility bus announced to
        X clients."""
        assert self.runtime is not None
        self.x_display = None
        if self.x11:
            self.x_display = await xwayland.find_display(self.runtime, lambda argv: self.run_in_session(argv))
            if self.x_display is None:
                log.warning("Sway did not say its Xwayland DISPLAY: X11 apps will not start")
        await self._share_display()
        await self._announce_atspi_bus()

    async def _share_display(self) -> None:
        """The display variables for what the session bus starts (with Sway's readiness
        and the bus's own: either may come back without the other)."""
        if not self.swaysock:
            return
        values = {"WAYLAND_DISPLAY": "wayland-1"}
        if self.x_display:
            values["DISPLAY"] = self.x_display
        await xwayland.update_activation_env(self.dbus_address or "", SYSTEM_PATH, values)

    async def _announce_atspi_bus(self) -> None:
        if not self.x_display:
            return
        address = await xwayland.atspi_bus_address(self.dbus_address or "", SYSTEM_PATH)
        if address is None:
            return  # the accessibility bus is not up yet: its readiness does this
        if await self.run_in_session(xwayland.set_atspi_bus_argv(address)) != 0:
            log.warning("AT_SPI_BUS not set on the X root window: Qt apps may miss the accessibility bus")

    async def _dbus_ready(self, child: Child) -> None:
        assert self.runtime is not None
        await until_ready(child, "dbus-daemon", self._log("dbus"),
                          readiness.unix_socket_accepts(str(self.runtime / "bus")), interval=0.02)
        await self._share_display()

    async def _atspi_ready(self, child: Child) -> None:
        await until_ready(child, "at-spi-bus-launcher", self._log("atspi"),
                          readiness.atspi_enabled(self.dbus_address or "", SYSTEM_PATH))
        await self._announce_atspi_bus()

    async def _http_ready(self, child: Child, url: str, what: str, *, any_status: bool = False) -> None:
        await until_ready(child, what, self._log(what), readiness.http_answers(url, any_status=any_status))

    async def _chromium_ready(self, child: Child) -> None:
        await until_ready(child, "chromium", self._log("chromium"), readiness.chromium_has_a_page(self.args.cdp_port))

    # -- children -------------------------------------------------------------------------

    def _chromium_argv(self) -> list[str]:
        assert self.runtime is not None
        urls, self.browser_urls = self.browser_urls, None
        extra = (env("DESKBOX_CHROMIUM_FLAGS") or "").split()
        if urls is None:
            # Started again after it went on its own: the tabs it had, as the bridge last
            # saw them (Chrome's own session file lags behind by seconds).
            urls = self._last_tabs()
        return chromium_argv(self.browser_binary, cdp_port=self.args.cdp_port,
                             user_data_dir=str(self.profile_dir), wayland=True, extra_flags=extra,
                             urls=urls or [])

    async def _close_browser(self, child: Child) -> None:
        """Quit the browser as its menu does (Browser.close): it writes its profile out.
        Its tabs are noted first: closing them all is part of quitting, and the bridge
        would note that instead."""
        base = f"http://127.0.0.1:{self.args.cdp_port}"
        async with ClientSession(timeout=ClientTimeout(total=5)) as http:
            async with http.get(base + "/json/list") as resp:
                urls = [t["url"] for t in await resp.json() if t.get("type") == "page"
                        and not t.get("url", "").startswith(("chrome:", "devtools:", "chrome-untrusted:"))]
            if urls and self.browser_urls is None:
                self.browser_urls = urls
            async with http.get(base + "/json/version") as resp:
                ws_url = (await resp.json())["webSocketDebuggerUrl"]
            async with http.ws_connect(ws_url, max_msg_size=0) as ws:
                await ws.send_json({"id": 1, "method": "Browser.close"})
                await ws.receive(timeout=5)

    def _last_tabs(self) -> list[str]:
        assert self.runtime is not None
        try:
            urls = json.loads((self.runtime / "tabs.json").read_text())
        except (OSError, ValueError):
            return list(self.urls)
        return [u for u in urls if isinstance(u, str)] or list(self.urls)

    def _chromium_env(self) -> dict[str, str]:
        # Its Wayland app id comes from this (Debian's launcher sets it): "chromium".
        return {**self.session_env(), "CHROME_DESKTOP": "chromium.desktop"}

    def _specs(self) -> list[ChildSpec]:
        assert self.runtime is not None
        args = self.args
        logs = self.runtime / "logs"
        home = str(self.home_path)
        service = {"user": self.service_uid, "group": self.gid if self.service_uid is not None else None,
                   "cwd": str(IMPORT_ROOT), "env": self._service_env}
        desktopd_url, scene_url = self.url(args.desktopd_port), self.url(args.scene_port)
        bridge_url = None if args.no_browser else self.url(args.bridge_port)
        specs = [
            ChildSpec(
                name="dbus",
                argv=lambda: [DBUS_DAEMON, f"--config-file={self.runtime / 'dbus-session.conf'}", "--nofork",
                              "--nopidfile", f"--address={self.dbus_address}"],
                env=self._base_env, ready=self._dbus_ready, user=self.uid, group=self.gid, cwd=home,
                log_path=str(logs / "dbus.log"), hosts_apps=True,
            ),
            # at-spi-bus-launcher owns org.a11y.Bus and runs the accessibility bus (a second
            # dbus-daemon, at <runtime>/at-spi/bus) in its own process group.
            ChildSpec(
                name="atspi", argv=lambda: [ATSPI_BUS_LAUNCHER, "--launch-immediately"],
                env=self._base_env, ready=self._atspi_ready, needs=("dbus",), user=self.uid, group=self.gid,
                cwd=home, log_path=str(logs / "atspi.log"),
            ),
            ChildSpec(
                name="sway", argv=lambda: ["sway", "--config", str(self.runtime / "sway.conf")],
                env=self._sway_env, ready=self._sway_ready, user=self.uid, group=self.gid, cwd=home,
                log_path=str(logs / "sway.log"), hosts_apps=True, helpers=(xwayland.XWAYLAND, "swaybg"),
            ),
            ChildSpec(
                name="desktopd",
                argv=lambda: [sys.executable, "-m", "deskbox.desktopd", "--listen",
                              f"{args.host}:{args.desktopd_port}", "--gate", scene_url,
                              *(["--gate-required"] if self._policy_given else []), "--log-level", args.log_level],
                ready=lambda child: self._http_ready(child, desktopd_url + "/api/v1/health", "desktopd"),
                needs=("sway",), log_path=str(logs / "desktopd.log"), ports=(args.desktopd_port,),
                **{**service, "env": self._gated_env},
            ),
        ]
        if not args.no_browser:
            profile = str(self.profile_dir)
            specs += [
                ChildSpec(
                    name="chromium", argv=self._chromium_argv, env=self._chromium_env, ready=self._chromium_ready,
                    # Chromium joins AT-SPI only at its start: a new accessibility bus needs a new Chromium.
                    needs=("sway", "dbus", "atspi"), user=self.uid, group=self.gid, cwd=home,
                    log_path=str(logs / "chromium.log"), ports=(args.cdp_port,),
                    # In OSWorld mode the task owns the browser's life: it ends it (`pkill chrome`)
                    # and starts it (`google-chrome ...`) itself; nothing restarts it behind its back.
                    restart="on-request" if args.osworld else "always", ask_to_stop=self._close_browser,
                    # Its crash handlers leave its process group: they name the profile folder.
                    after_stop=lambda: processes.end_mentioning(profile, uid=self.uid),
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
                ports=(args.scene_port,), **{**service, "env": self._scene_env},
            )
        )
        if args.osworld:
            specs.append(
                ChildSpec(
                    name="osworld", argv=lambda: self._osworld_argv(desktopd_url, bridge_url),
                    # The session's own environment: the commands it runs are the session's programs.
                    # `python -m` from the folder holding the package finds the services.
                    env=self.session_env,
                    ready=lambda child: self._http_ready(child, self.url(args.osworld_port) + "/health", "osworld"),
                    # No restart with the others: it only calls them (HTTP, a fresh AT-SPI walker
                    # each time), and a restart would drop the debugging-port relays it keeps.
                    user=self.service_uid, group=self.gid, cwd=str(IMPORT_ROOT),
                    log_path=str(logs / "osworld.log"), ports=(args.osworld_port,), hosts_apps=True,
                )
            )
        if args.observer:
            specs.append(
                ChildSpec(
                    name="observer", argv=lambda: self._observer_argv(desktopd_url, bridge_url, scene_url),
                    ready=lambda child: self._http_ready(child, self.url(args.observer_port) + "/api/healthz",
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
                                               "--runtime-dir", str(self.runtime), "--log-level", args.log_level],
                    ready=lambda child: self._http_ready(child, self.url(args.view_port) + "/health", "view"),
                    # Its wayvnc servers capture Sway's outputs: they go and come back with it.
                    needs=("sway",), log_path=str(logs / "view.log"), ports=(args.view_port,), **service,
                )
            )
        return specs

    def _observer_argv(self, desktopd_url: str, bridge_url: str | None, scene_url: str) -> list[str]:
        argv = [sys.executable, "-m", "deskbox.observer", "--listen", f"{self.args.host}:{self.args.observer_port}",
                "--scene", scene_url, "--desktopd", desktopd_url]
        if bridge_url is not None:
            argv += ["--bridge", bridge_url]
        return [*argv, "--log-level", self.args.log_level]

    def _osworld_argv(self, desktopd_url: str, bridge_url: str | None) -> list[str]:
        assert self.runtime is not None
        argv = [sys.executable, "-m", "deskbox.osworld", "--listen", f"{self.args.host}:{self.args.osworld_port}",
                "--desktopd", desktopd_url, "--browser-name", self.args.osworld_browser_name,
                "--work-dir", str(self.runtime / "osworld"), "--control", str(self.control_socket)]
        if bridge_url is not None:
            argv += ["--bridge", bridge_url, "--cdp-port", str(self.args.cdp_port)]
        return [*argv, "--log-level", self.args.log_level]

    @property
    def _policy_given(self) -> bool:
        return bool(self.args.policy or any(getattr(self.args, flag) for flag in BUDGET_FLAGS))

    def _gated_env(self) -> dict[str, str]:
        """desktopd's and the scene's environment: the services', and the internal secret."""
        return {**self._service_env(), INTERNAL_SECRET_ENV: self.internal_secret}

    def _scene_env(self) -> dict[str, str]:
        """The scene's: desktopd's, and the vision model's key when it has a model (the
        scene alone calls it; the apps of the session never see the key)."""
        env = self._gated_env()
        if self.args.vlm_url and os.environ.get(VLM_KEY_ENV):
            env[VLM_KEY_ENV] = os.environ[VLM_KEY_ENV]
        return env

    def _scene_argv(self, desktopd_url: str, bridge_url: str | None) -> list[str]:
        assert self.runtime is not None
        argv = [sys.executable, "-m", "deskbox.scene", "--listen", f"{self.args.host}:{self.args.scene_port}",
                "--desktopd", desktopd_url, "--control", str(self.control_socket),
                "--ids-file", str(self.runtime / "scene-ids.json")]
        if bridge_url is not None:
            argv += ["--bridge", bridge_url]
        if self.args.ocr != "off":
            argv += ["--ocr", self.args.ocr]
        if self.args.view:
            argv += ["--view", self.url(self.args.view_port)]
        if self.traces_dir is not None:
            argv += ["--traces", str(self.traces_dir)]
        if self.args.trace:
            argv.append("--trace-at-start")
        if self.args.policy:
            argv += ["--policy", str(Path(self.args.policy).resolve())]
        for flag in BUDGET_FLAGS:
            if getattr(self.args, flag):
                argv += [f"--{flag.replace('_', '-')}", str(getattr(self.args, flag))]
        if self.args.vlm_url:
            argv += ["--vlm-url", self.args.vlm_url, "--vlm-model", self.args.vlm_model]
        return [*argv, "--log-level", self.args.log_level]

    def _bridge_argv(self) -> list[str]:
        assert self.runtime is not None
        return [sys.executable, "-m", "deskbox.bridge", "--attach", "--tabs-file", str(self.runtime / "tabs.json"),
                "--listen", f"{self.args.host}:{self.args.bridge_port}",
                "--cdp-port", str(self.args.cdp_port), "--log-level", self.args.log_level]

