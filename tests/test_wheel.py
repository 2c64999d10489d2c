"""`pip install deskbox` gives a working `deskbox up`: the wheel built from this tree,
installed into a new virtual environment outside the checkout, starts a session from its
own files (the Sway configuration, the bridge, the shims are package data) and answers a
screenshot."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deskbox.session import processes
from tests.support import ROOT, Session, http

PNG = b"\x89PNG\r\n\x1a\n"


def _copy_of_the_tree(dest: Path) -> Path:
    """The files git tracks or would track, as they are now (links kept): a build in a
    copy leaves the checkout as it was."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        src, out = ROOT / name, dest / name
        if not src.exists() and not src.is_symlink():
            continue  # (deleted in the work tree)
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            out.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, out)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from this tree."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    tree = _copy_of_the_tree(tmp_path / "tree")
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(tree)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    (found,) = wheels.glob("deskbox-*.whl")
    return found


def new_venv(path: Path, *requirements: str, system_site_packages: bool) -> Path:
    """A new virtual environment outside the checkout with ``requirements`` installed."""
    options = ["--system-site-packages"] if system_site_packages else []
    subprocess.run([sys.executable, "-m", "venv", *options, str(path)], check=True, timeout=120)
    installed = subprocess.run([str(path / "bin" / "python"), "-m", "pip", "install", "-q", *requirements],
                               capture_output=True, text=True, timeout=1200)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return path


def test_the_wheel_in_a_fresh_venv_runs_a_session(wheel, tmp_path):
    # As `pipx install --system-site-packages` makes it: Debian's pyatspi stays importable.
    venv = new_venv(tmp_path / "venv", str(wheel), system_site_packages=True)
    # The package imported there is the venv's, not this checkout's.
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import deskbox; print(deskbox.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert where.stdout.strip().startswith(str(venv)), where

    session = Session(["640x480"], command=[str(venv / "bin" / "deskbox")], cwd=tmp_path)
    session.env.pop("PYTHONPATH", None)
    session.start(120)
    try:
        shot = http("GET", session.desktopd + "/api/v1/screenshot?display=0")
        assert shot.status == 200 and shot.body.startswith(PNG), shot.body[:200]
        page = http("GET", session.scene + "/api/v1/scene")
        assert page.status == 200 and page.json()["displays"][0]["size"] == [640, 480]
        # Every service runs on the venv's interpreter, from the venv's package.
        for port in (session.desktopd_port, session.bridge_port, session.scene_port):
            _, pids = processes.listening_pids(port)
            assert pids, f"nothing of the session listens on {port}"
            argv = Path(f"/proc/{pids[0]}/cmdline").read_bytes().split(b"\0")
            assert argv[0].decode().startswith(str(venv)), (port, argv)
    finally:
        session.stop()


def test_the_osworld_extra_alone_loads_every_metric_and_getter_module(wheel, tmp_path):
    """deskbox[osworld] and desktop-env (without its own requirements, as docs/run.md
    says) in a venv that sees nothing else, neither the test extra nor Debian's
    packages: every module of OSWorld's metrics and getters loads as deskbox run loads
    it, with every module it imports, at its top or in a function, installed (easyocr,
    librosa, acoustid and fastdtw aside: stood in for, and named when a metric that
    needs them runs)."""
    venv = new_venv(tmp_path / "venv", f"{wheel}[osworld]", system_site_packages=False)
    python = str(venv / "bin" / "python")
    desktop_env = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "desktop-env==1.0.2"],
                                 capture_output=True, text=True, timeout=600)
    assert desktop_env.returncode == 0, desktop_env.stderr[-3000:]
    checked = subprocess.run([python, "-c", "import json; from deskbox.run import graders; "
                              "print(json.dumps(graders.check()))"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300,
                             env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    assert checked.returncode == 0, checked.stderr[-3000:]
    modules = json.loads(checked.stdout.strip().splitlines()[-1])
    assert {"metrics/chrome", "metrics/table", "metrics/docs", "metrics/vlc", "getters/chrome"} <= set(modules)
    assert {name: problem for name, problem in modules.items() if problem} == {}
