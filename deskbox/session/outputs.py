"""`--output WxH[@scale]` specs and the sway configuration lines they become."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..geometry import side_by_side

__all__ = ["OutputSpec", "parse_output", "sway_output_lines"]

_SPEC = re.compile(r"^(\d{2,5})x(\d{2,5})(?:@(\d+(?:\.\d+)?))?$")
SUPPORTED_SCALES = (1.0, 2.0)


@dataclass(frozen=True, slots=True)
class OutputSpec:
    width: int
    height: int
    scale: float = 1.0

    def __str__(self) -> str:
        return f"{self.width}x{self.height}@{self.scale:g}"

    @property
    def logical_size(self) -> tuple[int, int]:
        """The size in layout (logical) pixels: what a window filling it asks for."""
        return round(self.width / self.scale), round(self.height / self.scale)


def parse_output(text: str) -> OutputSpec:
    """"1920x1080" or "2560x1440@2": size in device pixels, then the scale."""
    m = _SPEC.match(text.strip())
    if not m:
        raise ValueError(f"output {text!r} is not WxH or WxH@SCALE (e.g. 1920x1080 or 2560x1440@2)")
    w, h = int(m.group(1)), int(m.group(2))
    scale = float(m.group(3) or 1)
    if scale not in SUPPORTED_SCALES:
        raise ValueError(f"output {text!r}: scale must be 1 or 2")
    if not (64 <= w <= 8192 and 64 <= h <= 8192):
        raise ValueError(f"output {text!r}: width and height must be 64..8192")
    if w % scale or h % scale:
        raise ValueError(f"output {text!r}: size must be divisible by the scale")
    return OutputSpec(w, h, scale)


def sway_output_lines(specs: list[OutputSpec]) -> list[str]:
    """Headless outputs are named HEADLESS-1, -2, ... in creation order; each is placed
    right of the previous one in layout space."""
    origins = side_by_side((s.width, s.height, s.scale) for s in specs)
    return [
        f"output HEADLESS-{i + 1} mode {s.width}x{s.height} position {x} {y} scale {s.scale:g}"
        for i, (s, (x, y)) in enumerate(zip(specs, origins))
    ]
