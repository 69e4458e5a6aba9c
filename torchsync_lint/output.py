"""Where a report goes: stdout, or `--output-file PATH`, its missing directories created (as
ruff does since astral-sh/ruff#11550). A file we cannot write is an OutputError (exit 2, one
line), not an internal error."""

from __future__ import annotations

import os
import sys


class OutputError(OSError):
    """The report could not be written where the user asked (exit 2)."""


def write_report(text: str | bytes, output_file: str | None) -> None:
    """Write ``text`` (bytes are written as they are: `--fix -` hands back undecodable input)."""
    if not output_file:
        sys.stdout.flush()
        if isinstance(text, bytes):
            stream = getattr(sys.stdout, "buffer", None)
            if stream is None:  # a text stream in tests
                sys.stdout.write(text.decode("utf-8", "replace"))
            else:
                stream.write(text)
                stream.flush()
        else:
            sys.stdout.write(text)
        sys.stdout.flush()
        return
    directory = os.path.dirname(output_file)
    try:
        if directory:
            os.makedirs(directory, exist_ok=True)
        with open(output_file, "wb" if isinstance(text, bytes) else "w", **({} if isinstance(text, bytes) else {"encoding": "utf-8"})) as fh:
            fh.write(text)
    except OSError as exc:
        raise OutputError(f"cannot write the report to {output_file}: {exc.strerror or exc}") from exc
