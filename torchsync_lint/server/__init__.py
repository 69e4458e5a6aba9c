"""`torchsync-lint server`: the language server (LSP over stdio), for findings as you type.

pygls is an optional dependency (`pip install 'torchsync-lint[server]'`): nothing here imports
it until the server starts, so the lint path and the other commands never need it.

- workspace.py: what to lint and re-lint (documents, settings, dependents), on the project
  Session every entry point shares (project/session.py); no protocol.
- actions.py, notebooks.py, text.py: code actions, notebook cells and positions as data.
- protocol.py (the server: scheduling, publishing), handlers.py (the LSP methods): the
  pygls glue.
- framing.py (messages out of the byte stream, recovering from bad frames), stdio.py (the
  loop that hands them to pygls, answering what pygls leaves unanswered).
"""

from __future__ import annotations

import sys

INSTALL_HINT = "pip install 'torchsync-lint[server]'"
DEFAULT_DEBOUNCE_MS = 100
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # as framing.py's (not imported: no pygls before run)


def add_arguments(parser) -> None:
    parser.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default and only transport; accepted for editors that pass it)")
    parser.add_argument(
        "--debounce-ms", type=int, default=DEFAULT_DEBOUNCE_MS, metavar="MS",
        help=f"lint this long after the last keystroke (default: {DEFAULT_DEBOUNCE_MS}; the client's initializationOptions.debounce overrides it)",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write .torchsync_cache/")
    parser.add_argument(
        "--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES, metavar="N",
        help=f"refuse an LSP message larger than N bytes: it is discarded unread, logged, and the server goes on (default: {DEFAULT_MAX_MESSAGE_BYTES}, 64 MiB)",
    )


def run(args) -> int:
    try:
        import lsprotocol.types  # noqa: F401
        from pygls.lsp.server import LanguageServer  # noqa: F401  (pygls 2's module layout)
    except ImportError:
        print(f"torchsync-lint: error: `torchsync-lint server` needs pygls 2 (not installed here): {INSTALL_HINT}", file=sys.stderr)
        return 2
    if args.debounce_ms < 0:
        print("torchsync-lint: error: --debounce-ms must be 0 or more", file=sys.stderr)
        return 2
    if args.max_message_bytes < 1:
        print("torchsync-lint: error: --max-message-bytes must be 1 or more", file=sys.stderr)
        return 2
    from torchsync_lint.server.handlers import serve

    return serve(debounce=args.debounce_ms / 1000, use_cache=not args.no_cache, max_message_bytes=args.max_message_bytes)
