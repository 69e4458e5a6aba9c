"""The server's stdio loop, in place of pygls's `start_io`: messages from framing.py's reader
go to pygls's protocol, after the checks LSP asks of every server that pygls leaves out, so
that every request gets an answer:

- a request whose params do not fit its method: -32602 (InvalidParams), not silence;
- a request before `initialize`: -32002 (ServerNotInitialized); notifications then are dropped;
- a request after `shutdown`: -32600 (InvalidRequest); so is a second `initialize`;
- a body that is not JSON: -32700 (ParseError), and the reader resynchronises;
- `exit` ends the process with 0 after `shutdown` and 1 without (pygls raises SystemExit for
  it and then swallows its status).

The reader runs on a daemon thread reading the file descriptor itself: a read still waiting
on stdin must not hold up the process's exit, nor a buffered stream's lock at shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading

import cattrs
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.io_ import StdoutWriter
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage

from torchsync_lint.server.framing import END, Framer, Unreadable

logger = logging.getLogger(__name__)
_QUEUED = 16  # messages read ahead of the loop; the reader waits beyond that


def serve(server, stdin, stdout, max_bytes: int) -> int:
    """Run ``server`` (a pygls LanguageServer) on ``stdin``/``stdout`` until `exit` or the end
    of input; the process's exit status."""
    server._stop_event = threading.Event()  # pygls's shutdown() sets it; its handlers may look
    server.protocol.set_writer(StdoutWriter(stdout))
    fd = stdin.fileno()
    framer = Framer(lambda n: os.read(fd, n), max_bytes)
    try:
        return asyncio.run(_loop(server, framer))
    except BrokenPipeError:
        logger.error("torchsync-lint: the connection to the client is lost")
        return 1
    finally:
        server.shutdown()


async def _loop(server, framer: Framer) -> int:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue(_QUEUED)

    def pump() -> None:
        while True:
            try:
                item = framer.next()
            except Exception:  # noqa: BLE001 - a reader bug ends the input, not silently the thread
                logger.exception("torchsync-lint: reading stdin failed")
                item = END
            try:
                asyncio.run_coroutine_threadsafe(queue.put(item), loop).result()
            except Exception:  # noqa: BLE001 - the loop closed or cancelled the put: the server is exiting
                return
            if item is END:
                return

    threading.Thread(target=pump, name="torchsync-lint-stdin", daemon=True).start()
    server.input_pending = lambda: not queue.empty() or framer.holding()
    gate = Gate(server.protocol)
    while not server._stop_event.is_set():
        item = await queue.get()
        if item is END:
            break
        try:
            gate.handle(item)
        except SystemExit as exc:  # pygls's `exit`
            return exc.code if isinstance(exc.code, int) else 1
        except Exception:  # noqa: BLE001 - one message must not stop the server
            logger.exception("torchsync-lint: could not handle a message")
    return 0


class Gate:
    """One decoded message to pygls's protocol, or the error answer LSP wants for it."""

    def __init__(self, protocol) -> None:
        self.protocol = protocol
        self.initialized = False  # `initialize` received (and its params valid)

    def handle(self, raw) -> None:
        if isinstance(raw, Unreadable):
            return self._answer(None, JsonRpcParseError(f"Parse Error: {raw.reason}"))
        if not isinstance(raw, dict):
            return self._answer(None, JsonRpcInvalidRequest("Invalid Request: a message is a JSON object (batches are not supported)"))
        method = raw.get("method")
        if method is None:  # the client's answer to one of our requests
            return self.protocol.handle_message(self.protocol.structure_message(raw))
        request = "id" in raw
        msg_id = raw.get("id") if isinstance(raw.get("id"), (str, int)) and not isinstance(raw.get("id"), bool) else None
        refused = self._refusal(raw, method, request)
        if refused is not None:
            if request:
                return self._answer(msg_id, refused)
            logger.info("torchsync-lint: notification %r dropped: %s", method, refused.message)
            return None
        try:
            message = self._structure(raw, method, request)
        except JsonRpcException as exc:
            if request:
                return self._answer(msg_id, exc)
            logger.warning("torchsync-lint: notification %r dropped: %s", method, exc.message)
            return None
        if method == "initialize":
            self.initialized = True
        return self.protocol.handle_message(message)

    def _refusal(self, raw: dict, method, request: bool) -> JsonRpcException | None:
        """Why ``raw`` is refused before it is even decoded; None when it goes on."""
        if raw.get("jsonrpc") != "2.0" or not isinstance(method, str):
            return JsonRpcInvalidRequest('Invalid Request: not a JSON-RPC 2.0 message ("jsonrpc": "2.0", a string "method")')
        if method == "exit":
            return None
        if self.protocol._shutdown:
            return JsonRpcInvalidRequest(f"Invalid Request: {method} after shutdown")
        if not self.initialized:
            if method == "initialize" and request:
                return None
            return JsonRpcServerNotInitialized(f"ServerNotInitialized: {method} before initialize")
        if method == "initialize":
            return JsonRpcInvalidRequest("Invalid Request: initialize was already sent")
        return None

    def _structure(self, raw: dict, method: str, request: bool):
        """``raw`` as pygls's typed message (what its structure_message makes), with params
        that do not fit the method an InvalidParams saying where (and no traceback logged)."""
        kind = self.protocol.get_message_type(method) or (JsonRPCRequestMessage if request else JsonRPCNotification)
        try:
            return self.protocol._converter.structure(raw, kind)
        except cattrs.ClassValidationError as exc:
            where = "; ".join(cattrs.transform_error(exc, path="message"))
            raise JsonRpcInvalidParams(f"Invalid Params: {where}"[:500]) from None
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise JsonRpcInvalidParams(f"Invalid Params: {type(exc).__name__}: {exc}"[:500]) from None

    def _answer(self, msg_id, error: JsonRpcException) -> None:
        logger.warning("torchsync-lint: answered %s with error %d: %s", msg_id, error.code, error.message)
        # A plain dict: pygls's own response type drops an id that is None, and JSON-RPC wants
        # `"id": null` when the request's id could not be read
        self.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": error.code, "message": error.message}})
