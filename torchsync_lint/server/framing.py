"""LSP's base protocol on a byte stream: `Content-Length: N\\r\\n` headers, a blank line, N bytes
of JSON. No pygls here (server/stdio.py hands the messages to it).

pygls's own reader trusts every frame: a Content-Length a few bytes off (or none) glues the
rest of one message to the next header and it never finds a header again, and a huge one is
allocated up front (MemoryError). This reader recovers instead. After a frame it cannot use it
*resynchronises*: it drops bytes up to the next `Content-Length: N\\r\\n` and goes on from there.
That line cannot occur inside a valid JSON body (a JSON string cannot hold a raw CR or LF, and
the words are not JSON outside a string), so a match is always a real header, never a body's
text. For the same reason, a frame over the size cap is discarded by scanning it (never
buffered whole): a real oversized message is skipped exactly, and a bogus length stops at the
next real header instead of swallowing every later message.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Callable

logger = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 64 * 1024  # a header block is a line or two; more is garbage
_CHUNK = 64 * 1024
_TAIL = 256  # bytes kept between reads while scanning: a header line cut in two by a read
_HEADER = re.compile(rb"Content-Length[ \t]*:[ \t]*\d+[ \t]*\r\n", re.IGNORECASE)
_LENGTH = re.compile(rb"[ \t]*(\d+)[ \t]*")


END = object()  # the end of the stream (a message may be JSON's null: None is a message)


class Unreadable:
    """A frame that arrived whole but whose body is not JSON (answered with a parse error)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class Framer:
    """Messages from ``read`` (``read(n)`` -> at most n bytes, b"" at the end of the stream):
    ``next()`` gives each one's JSON value, an Unreadable, or END at the end. Not
    thread-safe: one reader thread calls it."""

    def __init__(self, read: Callable[[int], bytes], max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self._read = read
        self.max_bytes = max_bytes
        self._buf = bytearray()
        self._resync = False
        self._skip = 0  # bytes of an oversized body still to discard

    def holding(self) -> bool:
        """Whether bytes are read and not yet given out (part of a message, or more)."""
        return bool(self._buf)

    def next(self):
        while True:
            if self._skip and not self._discard():
                return END
            if self._resync:
                if not self._find_header():
                    return END
                continue
            block_end = self._buf.find(b"\r\n\r\n")
            if block_end < 0:
                if len(self._buf) > MAX_HEADER_BYTES:
                    self._lost(f"no end of header in {len(self._buf)} bytes")
                elif not self._fill():
                    return END
                continue
            if self._buf.startswith(b"\r\n"):  # blank lines between messages: harmless
                del self._buf[:2]
                continue
            length = self._content_length(bytes(self._buf[:block_end]))
            if length is None:
                continue
            del self._buf[: block_end + 4]
            if length > self.max_bytes:
                logger.error("torchsync-lint: a message of %d bytes is over the limit (%d, --max-message-bytes): discarded", length, self.max_bytes)
                self._skip = length
                continue
            while len(self._buf) < length:
                if not self._fill():
                    return END
            body = bytes(self._buf[:length])
            del self._buf[:length]
            try:
                return json.loads(body)
            except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
                # Likely a wrong length: what follows, from inside this body on, is searched
                # for the next header (a length too long has eaten the start of the next frame).
                self._buf[:0] = body[1:]
                self._lost(f"a message that is not JSON ({type(exc).__name__}: {str(exc)[:80]})", drop=0)
                return Unreadable(str(exc)[:200])

    # -- headers ----------------------------------------------------------------------------
    def _content_length(self, block: bytes) -> int | None:
        """The Content-Length of a header block; None (and resynchronising) when the block is
        not `Name: value` lines with exactly one valid Content-Length."""
        lengths = []
        for line in block.split(b"\r\n"):
            name, colon, value = line.partition(b":")
            if not colon or not name or not name.strip().replace(b"-", b"").isalnum():
                self._lost(f"a header line that is not `Name: value`: {line[:60]!r}")
                return None
            if name.strip().lower() == b"content-length":
                m = _LENGTH.fullmatch(value)
                if m is None:
                    self._lost(f"a Content-Length that is not a number: {value[:40]!r}")
                    return None
                lengths.append(int(m.group(1)))
        if len(lengths) != 1:
            self._lost("a header without Content-Length" if not lengths else "a header with two Content-Lengths")
            return None
        return lengths[0]

    def _lost(self, why: str, drop: int = 1) -> None:
        """The stream is out of step: log it and look for the next header (past the first
        ``drop`` bytes, so that the header just refused is not found again)."""
        logger.error("torchsync-lint: %s; skipping to the next Content-Length header", why)
        del self._buf[:drop]
        self._resync = True

    def _find_header(self) -> bool:
        """Drop bytes up to the next header line; False at the end of the stream."""
        while True:
            m = _HEADER.search(self._buf)
            if m is not None:
                del self._buf[: m.start()]
                self._resync = False
                return True
            del self._buf[: max(len(self._buf) - _TAIL, 0)]
            if not self._fill():
                return False

    def _discard(self) -> bool:
        """Drop the rest of an oversized body, stopping early at a header inside it (then its
        length was a lie); False at the end of the stream."""
        while self._skip:
            m = _HEADER.search(self._buf)
            if m is not None and m.start() < self._skip:
                logger.error("torchsync-lint: a header inside the discarded message: going on from there")
                del self._buf[: m.start()]
                self._skip = 0
                return True
            if len(self._buf) >= self._skip:
                del self._buf[: self._skip]
                self._skip = 0
                return True
            drop = max(len(self._buf) - _TAIL, 0)
            del self._buf[:drop]
            self._skip -= drop
            if not self._fill():
                return False
        return True

    def _fill(self) -> bool:
        data = self._read(_CHUNK)
        if not data:
            return False
        self._buf += data
        return True
