"""deskbox as an OSWorld provider: ``DesktopEnv(provider_name="deskbox")``.

    from deskbox.provider.osworld import register
    register()                                   # once, before making environments
    from desktop_env.desktop_env import DesktopEnv
    env = DesktopEnv(provider_name="deskbox", action_space="pyautogui")   # podman, image "deskbox"
    env = DesktopEnv(provider_name="deskbox", path_to_vm="podman:deskbox")
    env = DesktopEnv(provider_name="deskbox", path_to_vm="kubernetes:localhost/deskbox:latest?runner=podman")
    obs = env.reset(task_config=task); env.step("pyautogui.click(10, 10)"); env.close()

What is whose: ``DesktopEnv``, its controllers, task configs and graders are OSWorld's
(the ``desktop-env`` package, unmodified); they talk to the session's OSWorld server at
the address this provider gives (``host:server:chromium:vnc:vlc``). This module
starts, resets and stops sessions through ``deskbox.provider`` (podman or Kubernetes).

**Choosing the back end.** ``path_to_vm`` is ``[BACKEND:]IMAGE[?options]``
(``deskbox.provider.parse_target``): ``podman:deskbox``, ``kubernetes:IMAGE``; without
it, ``$DESKBOX_PROVIDER`` (``podman`` | ``kubernetes``, default podman) and
``$DESKBOX_IMAGE`` (default ``deskbox``). Options: ``screen=WxH`` (default: DesktopEnv's
``screen_size``), ``context=ID``, ``persist=0|1``, ``contexts_dir=PATH``, ``ttl=S``,
``runner=kubectl|podman`` and ``namespace=`` (Kubernetes).

**OSWorld's calls.**

- ``start_emulator(path_to_vm, headless, os_type)`` starts a session, or keeps the one it
  has when it still answers (DesktopEnv calls it again after every revert).
- ``get_ip_address`` -> ``127.0.0.1:<5000's port>:<9222's>:<8006's>:<8090's>``.
- ``save_state(path, name)`` -> ``POST /api/v1/session/snapshot {"name"}``.
- ``revert_to_snapshot(path, name)`` -> ``POST /api/v1/session/reset {"snapshot"}``: the
  session's own reset (about 2 s), not a new container. OSWorld's default name
  ``init_state`` means deskbox's ``start`` (the session as it was right after start)
  unless a snapshot named ``init_state`` was saved. A snapshot that does not exist
  raises ``SnapshotNotFound``. When the reset fails (no answer, an error, unhealthy
  afterwards) the container is recreated instead; its named snapshots are gone then.
- ``stop_emulator`` removes the container.

DesktopEnv treats "deskbox" as it treats "docker": an environment starts clean, so
its first ``reset()`` does not revert; it reverts after a step or a task's setup.

**A token of its own.** Each session made for DesktopEnv has a token of its own, and
OSWorld's controllers, setup steps and getters, which have no way to add a header, send it
on every request to that session's OSWorld server and on no other
(``deskbox.provider.credentials``). Another user of the machine, or another session's
agent, cannot run commands in it; a web page cannot either, token or not
(``deskbox.common.callers``).

desktop-env is a test dependency: this module imports it only inside ``register()``
(and the base classes guarded), so it imports without it.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import threading
from typing import Any

from . import (
    Environment,
    EnvironmentSpec,
    ProviderError,
    SnapshotNotFound,
    Target,
    credentials,
    new_token,
    parse_target,
)

try:  # the real base classes when desktop-env is installed (isinstance checks hold)
    from desktop_env.providers.base import Provider as _Provider
    from desktop_env.providers.base import VMManager as _VMManager
except ImportError:  # pragma: no cover - the classes work without desktop-env
    class _Provider:  # type: ignore[no-redef]
        def __init__(self, region: str | None = None) -> None:
            self.region = region

    class _VMManager:  # type: ignore[no-redef]
        checked_and_cleaned = False

__all__ = ["PROVIDER_NAME", "DeskboxProvider", "DeskboxVMManager", "register", "unregister",
           "create_vm_manager_and_provider", "make_backend", "spec_from_target"]

log = logging.getLogger("deskbox.provider.osworld")

PROVIDER_NAME = "deskbox"
OSWORLD_DEFAULT_SNAPSHOT = "init_state"
START = "start"  # deskbox's snapshot of the session right after start

# Set while DesktopEnv.__init__ runs for provider "deskbox": what the factory needs to
# know that DesktopEnv does not pass it (the screen size).
_creating: contextvars.ContextVar[dict | None] = contextvars.ContextVar("deskbox_creating", default=None)


def spec_from_target(target: Target, screen_size: tuple[int, int] | None = None) -> EnvironmentSpec:
    opts = target.options
    screen = opts.get("screen") or (f"{int(screen_size[0])}x{int(screen_size[1])}" if screen_size else "1920x1080")
    return EnvironmentSpec(
        image=target.image,
        outputs=[s for s in screen.split(",") if s],
        token=new_token(),  # sent for OSWorld's controllers (see the module's docstring)
        osworld=True,
        context=opts.get("context") or None,
        context_persist=opts.get("persist", "1") not in ("0", "false", "no"),
        contexts_dir=opts.get("contexts_dir") or None,
        ttl=float(opts["ttl"]) if opts.get("ttl") else None,
    )


def make_backend(target: Target) -> Any:
    if target.backend == "podman":
        from .podman import PodmanBackend

        return PodmanBackend()
    from .kubernetes import KubernetesBackend

    runner = target.options.get("runner") or None
    options = {"namespace": target.options["namespace"]} if target.options.get("namespace") else {}
    return KubernetesBackend(runner=runner, **options)


class DeskboxProvider(_Provider):
    """OSWorld's ``Provider`` over a deskbox back end. ``backend``: a ``PodmanBackend`` or
    ``KubernetesBackend`` to use instead of the one ``path_to_vm`` names (tests inject one)."""

    def __init__(self, region: str | None = None, *, screen_size: tuple[int, int] | None = None,
                 backend: Any = None, start_timeout: float = 300) -> None:
        super().__init__(region)
        self.screen_size = screen_size
        self.backend = backend
        self.start_timeout = start_timeout
        self.environment: Environment | None = None
        self._path: str | None = None
        self._lock = threading.RLock()
        self.starts = 0  # containers (pods) started
        self.resets = 0  # resets done by the session
        self.recreated = 0  # resets that had to recreate the container

    # -- OSWorld's interface --------------------------------------------------------------

    def start_emulator(self, path_to_vm: str, headless: bool = True, os_type: str = "Ubuntu", *args: Any,
                       **kwargs: Any) -> None:
        if os_type and str(os_type).lower() not in ("ubuntu", "linux"):
            raise ProviderError(f"deskbox sessions are Linux desktops; os_type {os_type!r} is not served")
        with self._lock:
            env = self.environment
            if env is not None:
                if str(path_to_vm) == self._path and env.alive() is True and env.probe() is None:
                    return  # already up (DesktopEnv calls this again after every revert)
                log.warning("deskbox: %s no longer answers or was asked for another target; starting anew", env.name)
                self._drop()
            self._start(str(path_to_vm))

    def get_ip_address(self, path_to_vm: str) -> str:
        return self._env().osworld_address()

    def save_state(self, path_to_vm: str, snapshot_name: str) -> None:
        self._env().snapshot(snapshot_name)

    def revert_to_snapshot(self, path_to_vm: str, snapshot_name: str) -> None:
        """The session's reset to ``snapshot_name`` (``init_state``: ``start``); the
        container is recreated when the reset fails. Returns None: the path stays."""
        with self._lock:
            if self.environment is None:
                return None  # nothing to revert: start_emulator starts a fresh one
            env = self.environment
            try:
                name = self.resolve_snapshot(snapshot_name)
                env.reset(name)
                self.resets += 1
                return None
            except SnapshotNotFound:
                raise
            except (ProviderError, OSError) as exc:
                log.warning("deskbox: the reset of %s failed (%s); recreating it", env.name, exc)
                if snapshot_name and snapshot_name not in (OSWORLD_DEFAULT_SNAPSHOT, START):
                    log.warning("deskbox: the new session starts clean: snapshot %r is lost with the old one",
                                snapshot_name)
            path = self._path or str(path_to_vm)
            self._drop()
            self._start(path)
            self.recreated += 1
            return None

    def stop_emulator(self, path_to_vm: str, region: str | None = None, *args: Any, **kwargs: Any) -> None:
        with self._lock:
            self._drop()

    # -- helpers --------------------------------------------------------------------------

    def resolve_snapshot(self, snapshot_name: str | None) -> str:
        """OSWorld's snapshot name as the session knows it."""
        if not snapshot_name or snapshot_name == OSWORLD_DEFAULT_SNAPSHOT:
            return OSWORLD_DEFAULT_SNAPSHOT if OSWORLD_DEFAULT_SNAPSHOT in self._env().snapshots() else START
        return snapshot_name

    def _env(self) -> Environment:
        if self.environment is None:
            raise ProviderError("no deskbox session: start_emulator first")
        return self.environment

    def _start(self, path: str) -> None:
        target = parse_target(path)
        backend = self.backend or make_backend(target)
        self.environment = backend.start(spec_from_target(target, self.screen_size), timeout=self.start_timeout)
        if self.environment.spec.token:
            credentials.authorize(self.environment.url("osworld"), self.environment.spec.token)
        self._path = path
        self.starts += 1
        log.info("deskbox: %s up at %s", self.environment.name, self.environment.osworld_address())

    def _drop(self) -> None:
        env, self.environment = self.environment, None
        if env is not None:
            credentials.forget(env.url("osworld"))
            try:
                env.stop()
            except ProviderError as exc:
                log.warning("deskbox: could not remove %s: %s", env.name, exc)


class DeskboxVMManager(_VMManager):
    """OSWorld's ``VMManager``: deskbox keeps no registry of machines (a session is made
    when asked for), so only ``get_vm_path`` does something: it names the target."""

    def initialize_registry(self, **kwargs: Any) -> None:
        pass

    def add_vm(self, vm_path: str, **kwargs: Any) -> None:
        pass

    def delete_vm(self, vm_path: str, **kwargs: Any) -> None:
        pass

    def occupy_vm(self, vm_path: str, pid: int, **kwargs: Any) -> None:
        pass

    def list_free_vms(self, **kwargs: Any) -> list[str]:
        return []

    def check_and_clean(self, **kwargs: Any) -> None:
        pass

    def get_vm_path(self, os_type: str = "Ubuntu", region: str | None = None,
                    screen_size: tuple[int, int] = (1920, 1080), **kwargs: Any) -> str:
        target = parse_target(None)
        target.options.setdefault("screen", f"{int(screen_size[0])}x{int(screen_size[1])}")
        return str(target)


def create_vm_manager_and_provider(provider_name: str, region: str | None,
                                   use_proxy: bool = False) -> tuple[DeskboxVMManager, DeskboxProvider]:
    creating = _creating.get() or {}
    return DeskboxVMManager(), DeskboxProvider(region, screen_size=creating.get("screen_size"))


_originals: dict[str, Any] = {}


def register() -> None:
    """Make ``DesktopEnv(provider_name="deskbox", ...)`` work with the unmodified
    desktop-env package. Call once (again is harmless) after desktop-env can be imported.

    It replaces ``create_vm_manager_and_provider`` where DesktopEnv looks it up
    (``desktop_env.desktop_env``, which imported it by name, and
    ``desktop_env.providers``) with one that answers "deskbox" and hands every other
    name to the original; and it wraps ``DesktopEnv.__init__``, whose fixed list of
    names refuses "deskbox": for "deskbox" the original runs as for "docker" (a clean
    environment at start), then ``env.provider_name`` is set back to "deskbox"."""
    import desktop_env.desktop_env as de
    import desktop_env.providers as providers

    if _originals:
        return
    original_factory = providers.create_vm_manager_and_provider
    original_init = de.DesktopEnv.__init__
    signature = inspect.signature(original_init)

    @functools.wraps(original_factory)
    def factory(provider_name: str, region: str | None, use_proxy: bool = False) -> tuple:
        name = str(provider_name).lower().strip()
        if name == PROVIDER_NAME or (name == "docker" and _creating.get() is not None):
            return create_vm_manager_and_provider(provider_name, region, use_proxy)
        return original_factory(provider_name, region, use_proxy=use_proxy)

    @functools.wraps(original_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        if str(bound.arguments["provider_name"]).lower().strip() != PROVIDER_NAME:
            return original_init(self, *args, **kwargs)
        bound.arguments["provider_name"] = "docker"
        token = _creating.set({"screen_size": bound.arguments.get("screen_size")})
        try:
            original_init(*bound.args, **bound.kwargs)
        except BaseException:
            provider = getattr(self, "provider", None)
            if isinstance(provider, DeskboxProvider):
                provider.stop_emulator(getattr(self, "path_to_vm", ""))
            raise
        finally:
            _creating.reset(token)
        self.provider_name = PROVIDER_NAME

    _originals.update(factory=original_factory, init=original_init,
                      de_factory=de.create_vm_manager_and_provider)
    de.create_vm_manager_and_provider = factory
    providers.create_vm_manager_and_provider = factory
    de.DesktopEnv.__init__ = __init__


def unregister() -> None:
    """Undo ``register()``."""
    if not _originals:
        return
    import desktop_env.desktop_env as de
    import desktop_env.providers as providers

    providers.create_vm_manager_and_provider = _originals["factory"]
    de.create_vm_manager_and_provider = _originals["de_factory"]
    de.DesktopEnv.__init__ = _originals["init"]
    _originals.clear()
