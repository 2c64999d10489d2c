"""The sync clients of a process share one event loop in one thread (a runner holds a
client per session, 24 or more at once), and a forked child starts its own."""

from __future__ import annotations

import os
import select
import signal
import threading

import pytest

import deskbox
from deskbox import Client


def loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "deskbox-client"]


def test_many_clients_one_loop_and_one_thread():
    clients = [Client(f"http://127.0.0.1:{9 + i}", None, None) for i in range(24)]
    try:
        assert len({id(c._loop) for c in clients}) == 1
        assert len(loop_threads()) == 1 and loop_threads()[0].daemon
        # A call still fails as the client says, on the shared loop.
        with pytest.raises(deskbox.ConnectError):
            clients[3].scene()
    finally:
        for c in clients:
            c.close()
    # Closing a client closes its connections, not the loop the others use; a closed
    # client says so rather than calling.
    with Client("http://127.0.0.1:9", None, None) as later:
        assert later._loop is clients[0]._loop and later._loop.is_running()
        later.close()  # (twice is harmless)
    with pytest.raises(deskbox.UnavailableError, match="closed") as closed:
        later.scene()
    assert closed.value.code == "client_closed"


def test_a_forked_child_runs_a_loop_of_its_own():
    with Client("http://127.0.0.1:9", None, None) as parent:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: the parent's loop thread did not come along
            ok = False
            try:
                with Client("http://127.0.0.1:9", None, None) as child:
                    own = child._loop is not parent._loop
                    try:
                        child.scene()
                    except deskbox.ConnectError:
                        ok = own  # (on the parent's dead loop the call would hang: the parent gives up)
                # The parent's own client, used in the child, moves to the child's loop too.
                try:
                    parent.scene()
                except deskbox.ConnectError:
                    pass  # (answered: on the parent's loop it would have hung)
                else:
                    ok = False
            finally:
                os.write(write, b"1" if ok else b"0")
                os._exit(0)
        os.close(write)
        ready, _, _ = select.select([read], [], [], 20)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        assert ready and os.read(read, 1) == b"1", "the child's client did not answer on a loop of its own"
