"""`pip install deskbox` gives a working `deskbox up`: the wheel built from this tree,
installed into a new virtual environment outside the checkout, starts a session from its
own files (the Sway configuration, the bridge, the shims are package data) and answers a
screenshot."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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


def test_the_wheel_in_a_fresh_venv_runs_a_session(tmp_path):
    tree = _copy_of_the_tree(tmp_path / "tree")
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(tree)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("deskbox-*.whl")

    # As `pipx install --system-site-packages` makes it: Debian's pyatspi stays importable.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
                               capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
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
