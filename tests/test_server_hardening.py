"""`torchsync-lint server` against input a well-behaved client never sends, over real stdio
(tests/_lsp_wire.py writes the raw bytes): frames with a wrong Content-Length or none, a huge
one, requests out of order or with params that do not fit, a storm of changes with no
debounce, and a buffer that stops parsing. After each bad input the server must keep
answering."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("pygls")

from pygls.uris import from_fs_path  # noqa: E402

from tests._lsp_wire import Wire, frame  # noqa: E402
from tests._server_project import TRAIN, line_of, make_project  # noqa: E402

HOVER = {"textDocument": {"uri": "file:///nowhere/x.py"}, "position": {"line": 0, "character": 0}}


@pytest.fixture()
def project(tmp_path):
    return make_project(tmp_path / "demo")


@pytest.fixture()
def wires():
    started: list[Wire] = []
    yield started
    for wire in started:
        wire.kill()


def start(wires, project, *args, initialize=True, **init) -> Wire:
    wire = Wire(project, *args)
    wires.append(wire)
    if initialize:
        assert wire.initialize(project, **init) is not None, wire.stderr()
    return wire


def hover_request(msg_id: int, **extra) -> bytes:
    return frame({"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/hover", "params": HOVER, **extra})


# -- 1. framing: a bad frame costs itself, not the session ------------------------------------

INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}).encode()
BAD_FRAMES = {
    "ten bytes short": frame(raw=INITIALIZED, length=len(INITIALIZED) - 10),
    "forty bytes long": frame(raw=INITIALIZED, length=len(INITIALIZED) + 40),
    "no Content-Length": b"Content-Type: application/vscode-jsonrpc\r\n\r\n{}",
    "a length that is not a number": b"Content-Length: twelve\r\n\r\n{}",
    "garbage before a header": b"this is not LSP\r\n" + frame(raw=INITIALIZED),
}


@pytest.mark.parametrize("bad", list(BAD_FRAMES), ids=list(BAD_FRAMES))
def test_a_bad_frame_is_skipped_and_later_requests_are_answered(wires, project, bad):
    wire = start(wires, project)
    wire.write(BAD_FRAMES[bad])
    answered = [wire.alive(20) for _ in range(3)]
    assert answered == [True, True, True], wire.stderr()
    assert wire.p.poll() is None
    assert "skipping to the next Content-Length header" in wire.stderr()


def test_frames_with_more_headers_or_back_to_back_are_read_as_they_are(wires, project):
    """Near misses that are valid: a Content-Type header, lowercase header names, several
    frames in one write, a blank line between frames. Nothing is skipped."""
    wire = start(wires, project)
    body = json.dumps({"jsonrpc": "2.0", "id": 50, "method": "textDocument/hover", "params": HOVER}).encode()
    wire.write(b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(body) + body
               + b"content-length: %d\r\n\r\n" % len(body.replace(b"50", b"51")) + body.replace(b"50", b"51")
               + b"\r\n" + hover_request(52))
    assert all(wire.answer(n, 20) is not None for n in (50, 51, 52))
    assert "skipping" not in wire.stderr()


def test_a_body_that_is_not_json_gets_a_parse_error_and_the_server_goes_on(wires, project):
    wire = start(wires, project)
    wire.write(frame(raw=b'{"jsonrpc": "2.0", "id": 9, "method": '))  # the right length, cut JSON
    error = wire.wait(lambda m: m.get("error", {}).get("code") == -32700, 20)
    assert error is not None and error["id"] is None
    assert wire.alive(20)


NOT_MESSAGES = {"null": (b"null", -32600), "an array": (b"[]", -32600), "a string": (b'"str"', -32600),
                "a number": (b"5", -32600), "not UTF-8": (b"\xff\xfe\x00garbage", -32700),
                "a method that is not a string": (b'{"jsonrpc": "2.0", "id": 99, "method": 5}', -32600)}


@pytest.mark.parametrize("body", list(NOT_MESSAGES), ids=list(NOT_MESSAGES))
def test_json_that_is_not_a_message_gets_an_error_and_the_server_goes_on(wires, project, body):
    wire = start(wires, project)
    raw, code = NOT_MESSAGES[body]
    wire.write(frame(raw=raw))
    assert wire.wait(lambda m: m.get("error", {}).get("code") == code, 20) is not None, wire.stderr()
    assert [wire.alive(20) for _ in range(2)] == [True, True]


# -- 2. a message size cap --------------------------------------------------------------------

def test_a_huge_content_length_is_refused_without_allocating_it(wires, project):
    wire = start(wires, project)
    wire.write(b"Content-Length: 99999999999999\r\n\r\n{}")
    assert [wire.alive(20) for _ in range(2)] == [True, True], wire.stderr()
    assert wire.p.poll() is None
    assert "99999999999999 bytes is over the limit" in wire.stderr()


def test_max_message_bytes_discards_a_larger_message_exactly_and_keeps_a_smaller(wires, project):
    """A real message over the cap (a valid JSON body) is discarded byte for byte: the
    request after it is read in step. One at the cap is served."""
    limit = 4096
    wire = start(wires, project, "--max-message-bytes", str(limit))

    def padded(msg_id: int, size: int) -> bytes:
        message = {"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/hover", "params": {**HOVER, "pad": ""}}
        message["params"]["pad"] = "x" * (size - len(json.dumps(message)))
        body = json.dumps(message).encode()
        assert len(body) == size
        return frame(raw=body)

    wire.write(padded(7, limit + 1) + hover_request(8) + padded(9, limit))
    assert wire.answer(8, 20) is not None and wire.answer(9, 20) is not None
    assert wire.answer(7, 1) is None  # refused: no answer, never read
    assert f"{limit + 1} bytes is over the limit ({limit}" in wire.stderr()


@pytest.mark.parametrize("value", ["0", "-5"])
def test_max_message_bytes_below_one_is_a_usage_error(wires, project, value):
    wire = start(wires, project, "--max-message-bytes", value, initialize=False)
    assert wire.exit_status(30) == 2
    assert "--max-message-bytes must be 1 or more" in wire.stderr()


# -- 3. a change storm with no debounce -------------------------------------------------------

def test_a_change_storm_without_debounce_lints_the_last_version_not_each(wires, project):
    """1 + N versions: the last is published, and the lints of versions superseded before
    their lint started are dropped ($/logTrace says which ran), not all run in turn."""
    n = 300
    wire = start(wires, project, "--debounce-ms", "0", trace="verbose")
    target = from_fs_path(str(project / "train.py"))
    wire.notify("textDocument/didOpen", {"textDocument": {"uri": target, "languageId": "python", "version": 1, "text": TRAIN}})
    assert wire.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics", 60) is not None
    insert = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "#\n"}
    wire.write(b"".join(frame({"jsonrpc": "2.0", "method": "textDocument/didChange",
                               "params": {"textDocument": {"uri": target, "version": v}, "contentChanges": [insert]}})
                        for v in range(2, n + 2)))
    last = wire.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == n + 1, 120)
    assert last is not None, wire.stderr()
    assert any(d["code"] == "TSL301" and d["range"]["start"]["line"] == line_of(TRAIN, "x = x.to") - 1 + n for d in last["params"]["diagnostics"])
    assert wire.alive(30)
    traces = [m["params"]["message"] for m in list(wire.messages) if m.get("method") == "$/logTrace"]
    linted = [int(re.search(r"linted version (\d+)", t).group(1)) for t in traces if "linted version" in t]
    assert linted[0] == 1 and linted[-1] == n + 1
    assert len(linted) < n // 4, f"{len(linted)} of {n + 1} versions linted"


def test_no_trace_is_sent_unless_the_client_asks(wires, project):
    wire = start(wires, project, "--debounce-ms", "0")
    target = from_fs_path(str(project / "train.py"))
    wire.notify("textDocument/didOpen", {"textDocument": {"uri": target, "languageId": "python", "version": 1, "text": TRAIN}})
    assert wire.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics", 60) is not None
    assert wire.alive(30)
    assert not [m for m in wire.messages if m.get("method") == "$/logTrace"]


# -- 4. every request is answered -------------------------------------------------------------

def error_code(answer: dict | None) -> int | None:
    return (answer or {}).get("error", {}).get("code")


def test_params_that_do_not_fit_get_invalid_params(wires, project):
    wire = start(wires, project)
    wire.write(frame(raw=b'{"jsonrpc":"2.0","id":100,"method":"textDocument/hover","params":"x"}'))
    wire.write(frame({"jsonrpc": "2.0", "id": 101, "method": "textDocument/hover", "params": {**HOVER, "position": {"line": -1, "character": 0}}}))
    wire.write(hover_request(102))  # the near miss: valid params, a null result
    assert error_code(wire.answer(100, 20)) == -32602
    assert error_code(wire.answer(101, 20)) == -32602
    valid = wire.answer(102, 20)
    assert valid is not None and "error" not in valid and valid["result"] is None
    assert wire.alive(20)


def test_a_request_before_initialize_gets_server_not_initialized(wires, project):
    wire = start(wires, project, initialize=False)
    assert error_code(wire.request("textDocument/hover", HOVER, 20)) == -32002
    assert wire.initialize(project) is not None  # then the session starts as usual
    assert wire.alive(20)
    assert error_code(wire.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}}, 20)) == -32600
    assert wire.alive(20)
    assert "Traceback" not in wire.stderr()


def test_after_shutdown_requests_get_invalid_request_and_exit_is_0(wires, project):
    wire = start(wires, project)
    answer = wire.request("shutdown", None, 20)
    assert answer is not None and "error" not in answer
    assert error_code(wire.request("textDocument/hover", HOVER, 20)) == -32600
    wire.notify("exit", None)
    assert wire.exit_status(30) == 0


def test_exit_without_shutdown_is_status_1(wires, project):
    wire = start(wires, project)
    assert wire.alive(20)
    wire.notify("exit", None)
    assert wire.exit_status(30) == 1


# -- 5. a buffer that does not parse keeps its last diagnostics --------------------------------

def test_a_buffer_that_stops_parsing_keeps_its_last_diagnostics_plus_the_syntax_error(wires, project):
    wire = start(wires, project, "--debounce-ms", "0")
    target = from_fs_path(str(project / "train.py"))
    broken = TRAIN + "x = (\n"
    wire.notify("textDocument/didOpen", {"textDocument": {"uri": target, "languageId": "python", "version": 1, "text": broken}})
    first = wire.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["version"] == 1, 60)
    assert [d["code"] for d in first["params"]["diagnostics"]] == ["TSL900"]  # nothing parsed yet: the error alone

    def publish(version: int, text: str) -> list[dict]:
        wire.notify("textDocument/didChange", {"textDocument": {"uri": target, "version": version}, "contentChanges": [{"text": text}]})
        found = wire.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["version"] == version, 60)
        assert found is not None, wire.stderr()
        return found["params"]["diagnostics"]

    good = publish(2, TRAIN)
    assert "TSL301" in {d["code"] for d in good} and "TSL900" not in {d["code"] for d in good}
    *kept, syntax = publish(3, broken)
    assert kept == good  # unchanged, as the editor showed them
    assert syntax["code"] == "TSL900" and syntax["severity"] == 1 and syntax["range"]["start"]["line"] == TRAIN.count("\n")
    *kept, syntax = publish(4, broken + "y = [\n")  # still broken: still the last good ones
    assert kept == good and syntax["code"] == "TSL900"
    assert publish(5, TRAIN.replace("x = x.to(device)", "x = x.to(device, non_blocking=True)")) != good  # parses: linted afresh
    assert wire.alive(20)


def test_a_notebook_cell_that_stops_parsing_keeps_the_cells_last_diagnostics(wires, tmp_path):
    """The broken cell keeps its findings plus the TSL900; the other cells keep theirs."""
    wire = start(wires, tmp_path, "--debounce-ms", "0")
    notebook = from_fs_path(str(tmp_path / "train.ipynb"))
    cells = [f"vscode-notebook-cell:{tmp_path / 'train.ipynb'}#cell{n}" for n in range(2)]
    texts = ["import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device('cuda')\nloader = DataLoader(ds, batch_size=8)\n",
             "for x, y in loader:\n    x = x.to(device)\n"]
    wire.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": notebook, "notebookType": "jupyter-notebook", "version": 1, "cells": [{"kind": 2, "document": c} for c in cells]},
        "cellTextDocuments": [{"uri": c, "languageId": "python", "version": 1, "text": t} for c, t in zip(cells, texts)]})

    def latest(cell: str, want) -> list[dict]:
        found = wire.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == cell and want(m["params"]["diagnostics"]), 60)
        assert found is not None, wire.stderr()
        return found["params"]["diagnostics"]

    def codes_of(diagnostics) -> list[str]:
        return sorted(d["code"] for d in diagnostics)

    good = [latest(cells[0], lambda d: "TSL302" in codes_of(d)), latest(cells[1], lambda d: "TSL301" in codes_of(d))]
    count = len(wire.messages)
    wire.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": notebook, "version": 2},
        "change": {"cells": {"textContent": [{"document": {"uri": cells[0], "version": 2}, "changes": [{"text": texts[0] + "x = (\n"}]}]}}})
    assert wire.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == cells[0] and "TSL900" in codes_of(m["params"]["diagnostics"]), 60) is not None
    assert wire.alive(20)
    after = {c: [m["params"]["diagnostics"] for m in wire.messages[count:] if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == c] for c in cells}
    *kept, syntax = after[cells[0]][-1]
    assert kept == good[0] and syntax["code"] == "TSL900" and syntax["range"]["start"]["line"] == 4
    assert all(d == good[1] for d in after[cells[1]])  # republished unchanged, if at all
