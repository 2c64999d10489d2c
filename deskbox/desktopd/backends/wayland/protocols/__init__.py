"""Python bindings for the wlroots protocols desktopd speaks, generated at first use.

The XML files beside this module are deskbox's own transcriptions of the published
interfaces. pywayland ships the core protocol and its scanner but not these, so the
scanner turns them into modules in a cache folder keyed by the files' hash; a later
start with the same files imports them straight away.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

__all__ = ["load"]

_HERE = Path(__file__).parent
_CORE = ("wl_output", "wl_seat", "wl_buffer", "wl_shm", "wl_pointer")


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    root = Path(base) / "deskbox" / "wayland-protocols"
    try:
        root.mkdir(parents=True, exist_ok=True)
        return root
    except OSError:
        # A home without a writable cache (a locked-down service user): use /tmp.
        root = Path(tempfile.gettempdir()) / f"deskbox-wayland-protocols-{os.getuid()}"
        root.mkdir(parents=True, exist_ok=True)
        return root


def _generate(target: Path, xml_files: list[Path]) -> None:
    from pywayland.scanner import Protocol

    protocols = [Protocol.parse_file(str(path)) for path in xml_files]
    imports = {iface.name: proto.name for proto in protocols for iface in proto.interface}
    imports.update({name: "wayland" for name in _CORE})
    staging = Path(tempfile.mkdtemp(prefix=".gen-", dir=target.parent))
    for proto in protocols:
        proto.output(str(staging), imports)
    # The generated modules import core interfaces as ``from .wayland import X``.
    (staging / "wayland.py").write_text("from pywayland.protocol.wayland import *  # noqa: F401,F403\n")
    (staging / "__init__.py").write_text("")
    try:
        staging.rename(target)
    except OSError:
        # Another process generated the same hash first; theirs is identical.
        for child in staging.iterdir():
            child.unlink()
        staging.rmdir()


def load() -> dict[str, ModuleType]:
    """Return the generated protocol modules by protocol name."""
    xml_files = sorted(_HERE.glob("*.xml"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in xml_files)).hexdigest()[:16]
    package = f"deskbox_wlproto_{digest}"
    root = _cache_root()
    target = root / package
    if not (target / "__init__.py").exists():
        _generate(target, xml_files)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return {p.stem: importlib.import_module(f"{package}.{p.stem}") for p in xml_files}
