"""Listen addresses."""

from __future__ import annotations

__all__ = ["parse_listen"]


def parse_listen(value: str) -> tuple[str, int]:
    """"127.0.0.1:8080", "[::1]:8080" or ":8080" (loopback) -> (host, port)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"listen address {value!r} is not host:port")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)
