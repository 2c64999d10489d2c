"""What passes from a viewer to the VNC server: the RFB 3.8 client stream, read message by
message, with input (keys, pointer, clipboard, QEMU key events) dropped unless the viewer
has taken control. A message this does not know ends the connection rather than being
passed on unread. Pure logic (RFC 6143, section 7.5)."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from typing import Awaitable, Callable

__all__ = ["ClientStream", "RfbError", "INPUT_TYPES", "MAX_MESSAGE", "forward"]

# Client message types (RFC 6143 7.5; 150, 248-255 are the registered extensions).
_SET_PIXEL_FORMAT, _SET_ENCODINGS, _UPDATE_REQUEST, _KEY, _POINTER, _CUT_TEXT = 0, 2, 3, 4, 5, 6
_CONTINUOUS_UPDATES, _SET_DESKTOP_SIZE, _QEMU = 150, 251, 255
INPUT_TYPES = frozenset({_KEY, _POINTER, _CUT_TEXT, _QEMU})


class RfbError(Exception):
    pass


# The largest client message passed on: a clipboard's text is the only one that can be
# long, and a viewer's paste of this much is already more than anyone types. Beyond it
# the connection ends, rather than the relay buffering what the message says will come.
MAX_MESSAGE = 1024 * 1024


class ClientStream:
    """Feed it what the viewer sent; it answers what may go on to the server."""

    def __init__(self, *, control: bool) -> None:
        self.control = control
        self._buf = bytearray()
        # The handshake: protocol version (12 bytes), the chosen security type (1), and
        # ClientInit (1); then messages.
        self._handshake = [12, 1, 1]
        self.dropped = 0

    def feed(self, data: bytes) -> bytes:
        self._buf += data
        out = bytearray()
        while True:
            if self._handshake:
                need = self._handshake[0]
                if len(self._buf) < need:
                    break
                out += self._buf[:need]
                del self._buf[:need]
                self._handshake.pop(0)
                continue
            size = self._message_size()
            if size is not None and size > MAX_MESSAGE:
                raise RfbError(f"a client message of {size} bytes is over the relay's {MAX_MESSAGE}")
            if size is None or len(self._buf) < size:
                break
            message = bytes(self._buf[:size])
            del self._buf[:size]
            if message[0] in INPUT_TYPES and not self.control:
                self.dropped += 1
            else:
                out += message
        return bytes(out)

    def _message_size(self) -> int | None:
        """The whole size of the message at the start of the buffer; None until enough of
        it has come to tell."""
        buf = self._buf
        if not buf:
            return None
        kind = buf[0]
        fixed = {_SET_PIXEL_FORMAT: 20, _UPDATE_REQUEST: 10, _KEY: 8, _POINTER: 6, _CONTINUOUS_UPDATES: 10}
        if kind in fixed:
            return fixed[kind]
        if kind == _SET_ENCODINGS:
            return None if len(buf) < 4 else 4 + 4 * struct.unpack(">H", buf[2:4])[0]
        if kind == _CUT_TEXT:
            # (A negative length is the extended clipboard's: as many bytes follow.)
            return None if len(buf) < 8 else 8 + abs(struct.unpack(">i", buf[4:8])[0])
        if kind == _SET_DESKTOP_SIZE:
            return None if len(buf) < 8 else 8 + 16 * buf[6]
        if kind == _QEMU:
            if len(buf) < 2:
                return None
            if buf[1] == 0:  # extended key event
                return 12
            raise RfbError(f"QEMU client message {buf[1]} is not one this relay knows")
        raise RfbError(f"client message type {kind} is not one this relay knows")


async def forward(reader: asyncio.StreamReader, send: Callable[[bytes], Awaitable[None]]) -> None:
    """Pass what the VNC server sends on to the viewer until the server's stream ends:
    at its end of file, or at a reset. A server killed while bytes of the viewer's were
    still unread on its side resets the socket instead of closing it (Linux reports
    ECONNRESET), and a viewer gone makes ``send`` fail the same way: either ends it."""
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            await send(data)
