"""The live view's relay: a viewer's RFB stream read message by message, its input
dropped unless it has control, what it does not know refused."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

from deskbox.view.relay import MAX_MESSAGE, ClientStream, RfbError, forward

HANDSHAKE = b"RFB 003.008\n" + bytes([1]) + bytes([1])
ENCODINGS = bytes([2, 0]) + struct.pack(">H", 2) + struct.pack(">ii", 0, -223)
UPDATE = bytes([3, 1]) + struct.pack(">HHHH", 0, 0, 1280, 800)
KEY = bytes([4, 1, 0, 0]) + struct.pack(">I", 0x61)
POINTER = bytes([5, 1]) + struct.pack(">HH", 10, 20)
CUT = bytes([6, 0, 0, 0]) + struct.pack(">I", 3) + b"abc"
QEMU_KEY = bytes([255, 0]) + struct.pack(">HII", 1, 0x61, 30)


def test_a_viewer_without_control_gets_pixels_but_sends_no_input():
    stream = ClientStream(control=False)
    passed = stream.feed(HANDSHAKE + ENCODINGS + KEY + POINTER + UPDATE + CUT + QEMU_KEY)
    assert passed == HANDSHAKE + ENCODINGS + UPDATE and stream.dropped == 4


def test_a_viewer_with_control_passes_everything_in_any_chunks():
    stream = ClientStream(control=True)
    data = HANDSHAKE + ENCODINGS + KEY + POINTER + UPDATE + CUT
    passed = b"".join(stream.feed(data[i:i + 3]) for i in range(0, len(data), 3))
    assert passed == data and stream.dropped == 0


def test_the_extended_clipboards_negative_length_is_read_whole():
    stream = ClientStream(control=False)
    extended = bytes([6, 0, 0, 0]) + struct.pack(">i", -5) + b"12345"
    assert stream.feed(HANDSHAKE + extended + UPDATE) == HANDSHAKE + UPDATE


@pytest.mark.parametrize("message", [bytes([99, 0, 0, 0]), bytes([255, 7, 0, 0])])
def test_a_message_it_does_not_know_is_refused(message):
    stream = ClientStream(control=True)
    stream.feed(HANDSHAKE)
    with pytest.raises(RfbError):
        stream.feed(message)


def test_a_message_that_says_it_is_longer_than_the_limit_ends_the_connection_before_it_comes():
    stream = ClientStream(control=True)
    stream.feed(HANDSHAKE)
    fits = bytes([6, 0, 0, 0]) + struct.pack(">I", MAX_MESSAGE - 8)
    assert stream.feed(fits) == b""  # (waiting for the text)
    stream = ClientStream(control=True)
    stream.feed(HANDSHAKE)
    with pytest.raises(RfbError, match="over the relay"):
        stream.feed(bytes([6, 0, 0, 0]) + struct.pack(">i", -(2**31 - 1)))


def test_the_server_killed_with_the_viewers_bytes_unread_ends_the_forwarding(tmp_path):
    """make flakes once left a page "connected" after wayvnc was killed: wayvnc died with
    bytes of the page's unread, so the relay's read got ECONNRESET, not an end of file,
    and its pump ended with the error while the page's socket stayed open. A real Unix
    socket whose server closes with our bytes unread, as the kill leaves it."""
    async def run() -> list[bytes]:
        path = str(tmp_path / "vnc.sock")
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.listen()
        reader, writer = await asyncio.open_unix_connection(path)
        conn, _ = server.accept()
        conn.sendall(b"RFB 003.008\n")
        writer.write(UPDATE)  # (never read by the server)
        await writer.drain()
        await asyncio.sleep(0.1)
        conn.close()
        sent: list[bytes] = []

        async def send(data: bytes) -> None:
            sent.append(data)

        await asyncio.wait_for(forward(reader, send), 5)
        writer.close()
        server.close()
        return sent

    assert b"".join(asyncio.run(run())) == b"RFB 003.008\n"
