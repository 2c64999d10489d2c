"""A local session's ports are chosen together, so they differ from each other (one at a
time, the kernel may hand a port out twice: a run's session once lost its bridge's port
to its own Chromium's DevTools port)."""

from __future__ import annotations

import socket

from deskbox.common.net import free_ports


def test_the_ports_of_one_session_all_differ_and_are_free():
    for _ in range(20):
        ports = free_ports(7)
        assert len(set(ports)) == 7
    for port in free_ports(7):
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free when answered
