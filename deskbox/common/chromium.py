"""Chromium's command line, in one place: ``deskbox up`` starts the session's browser
with it, and the CDP bridge when it runs on its own (``chromium_with_api.py``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["BASE_FLAGS", "OSWORLD_DISABLED_FEATURES", "chromium_argv", "with_disabled_features", "real_executable",
           "named_chrome", "named_as", "sandbox_refused", "NO_SANDBOX_FLAGS", "CHROME_NAME", "CODE_NAME"]

BASE_FLAGS = (
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--password-store=basic",
    "--force-renderer-accessibility",
    "--hide-crash-restore-bubble",
)

# A browser without its sandbox; --test-type keeps the "unsupported command-line flag"
# bar off every page (agents would see it; OSWorld's Chrome does not show it).
NO_SANDBOX_FLAGS = ("--no-sandbox", "--test-type")

# What OSWorld mode turns off so that the browser starts as the Google Chrome of
# OSWorld's VM does. LocalNetworkAccessChecks: Chromium 156 marks every profile it opens
# (``profile.default_content_setting_values.has_migrated_local_network_access``), and
# OSWorld's getter for "delete browsing data on close" answers "true" whenever
# ``default_content_setting_values`` exists at all: a task a do-nothing agent passed.
# The VM's Chrome predates those checks; deskbox's own services refuse pages' requests
# by their Origin, not through this.
OSWORLD_DISABLED_FEATURES = ("LocalNetworkAccessChecks",)


def with_disabled_features(flags: list[str] | tuple[str, ...], features: tuple[str, ...]) -> list[str]:
    """``flags`` with ``features`` added to its ``--disable-features`` (Chromium reads
    only the last such flag, so they are merged into one)."""
    named: list[str] = []
    rest: list[str] = []
    for flag in flags:
        if flag.startswith("--disable-features="):
            named += flag.partition("=")[2].split(",")
        else:
            rest.append(flag)
    merged = list(dict.fromkeys(f for f in [*named, *features] if f))
    return [*rest, "--disable-features=" + ",".join(merged)] if merged else rest


# Debian's /usr/bin/chromium is a shell script that adds flags deskbox does not need
# (extension loading, GPU rasterization: there is no GPU) and then execs this binary.
_DEBIAN_BINARY = Path("/usr/lib/chromium/chromium")


def real_executable(name: str) -> str:
    """The browser binary behind ``name``: Debian's wrapper script is skipped so that
    the browser's process is the one started (its name is then the name it was started
    by, which ``pkill`` and ``killall`` match)."""
    found = shutil.which(name) or name
    if os.path.basename(name) == "chromium" and _DEBIAN_BINARY.exists():
        try:
            with open(found, "rb") as f:
                if f.read(2) == b"#!":
                    return str(_DEBIAN_BINARY)
        except OSError:
            pass
    return found


# The name OSWorld's task configs end Chrome by (`pkill chrome`, `killall chrome`), and
# the one VS Code's windows have (deskbox.osworld.vscode: `pkill code`).
CHROME_NAME = "chrome"
CODE_NAME = "code"


def named_chrome(binary: str) -> tuple[str, str | None]:
    """The browser binary under the name ``chrome``, and a warning when that cannot be."""
    return named_as(binary, CHROME_NAME)


def named_as(binary: str, name: str) -> tuple[str, str | None]:
    """The browser binary under ``name``, and a warning when that cannot be.

    Chromium names its process after the file ``/proc/self/exe`` points to, through
    symlinks: only a hard link of the binary, in its own folder (where its resources
    are), makes the process ``name``. The link is made (or made again after a
    package upgrade replaced the binary) when this runs as root."""
    path = Path(binary)
    link = path.with_name(name)
    if path.name == name:
        return binary, None
    try:
        if link.exists() and os.path.samefile(link, path):
            return str(link), None
    except OSError:
        pass
    if os.geteuid() != 0:
        return binary, (f"{link} is not a hard link of {path} (run deskbox up as root once to make it): "
                        f"the browser runs as {path.name!r}, which `pkill {name}` does not match")
    tmp = link.with_name(f".{name}.{os.getpid()}")
    try:
        os.link(path, tmp)
        os.replace(tmp, link)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        return binary, f"cannot link {path} as {link}: {exc}; `pkill {name}` will not match the browser"
    return str(link), None


def sandbox_refused(user: tuple[int, int] | None = None) -> str | None:
    """Why Chromium's sandbox cannot run for ``user`` (uid, gid; None: this process's),
    or None when it can. Its sandbox is a user namespace with its own pids and network
    (Debian's Chromium has no setuid helper); a kernel or seccomp profile that refuses
    unprivileged user namespaces refuses the sandbox, and Chromium then does not start
    unless told --no-sandbox. Tried here as Chromium would make it."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "unshare (util-linux) is not installed, so the sandbox could not be tried"
    kwargs: dict = {}
    if user is not None and os.geteuid() == 0 and user[0] != 0:
        kwargs.update(user=user[0], group=user[1], extra_groups=[])
    try:
        done = subprocess.run([unshare, "--user", "--pid", "--net", "--fork", "/bin/true"], capture_output=True,
                              text=True, timeout=10, **kwargs)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare could not run: {exc}"
    if done.returncode != 0:
        return f"the kernel refuses an unprivileged user namespace: {done.stderr.strip() or done.returncode}"
    return None


def chromium_argv(executable: str, *, cdp_port: int, user_data_dir: str, wayland: bool,
                  extra_flags: list[str] | tuple[str, ...] = (), urls: list[str] | tuple[str, ...] = (),
                  window_size: tuple[int, int] | None = None, sandbox: bool | None = None) -> list[str]:
    """Native Wayland when the session has a Wayland display, X11 otherwise; DevTools on
    loopback only.

    ``window_size``: the size (logical px) the window opens at, the display's. Sway tiles
    the window to fill it anyway; opened at Chromium's own default size (1018x738 on a
    1280x800 display) the window was first drawn smaller than its tile, and Sway 1.7 then
    sometimes kept sending pointer events placed as if the smaller surface were still
    centred in the tile: a click after a restart landed 125 px left and 31 px up of where
    it was sent (2 to 5 restarts in 40), and others 6 px to the right. Opened at the
    display's size, none did in 120.

    ``sandbox``: whether Chromium runs its sandbox (``sandbox_refused`` says whether it
    can); None: unless this process is root, whose Chromium the sandbox refuses."""
    argv = [executable, f"--ozone-platform={'wayland' if wayland else 'x11'}", *BASE_FLAGS,
            "--remote-debugging-address=127.0.0.1", f"--remote-debugging-port={cdp_port}",
            f"--user-data-dir={user_data_dir}"]
    if window_size is not None:
        argv.append(f"--window-size={window_size[0]},{window_size[1]}")
    if sandbox is None:
        sandbox = os.geteuid() != 0  # (Chromium's sandbox refuses root)
    if not sandbox:
        argv += NO_SANDBOX_FLAGS
    return [*argv, *extra_flags, *urls]
