"""Jupyter notebooks: `check`, `--fix`, `--diff`, `--add-noqa` and directory walks on `.ipynb`.

Issue 15: `check train.ipynb` said "Found 0 findings" (the notebook's JSON parses as a Python
expression). A notebook is now linted cell by cell, positions are `cell N:line:col`, and a fix
changes only the source lines it edits: outputs, metadata, ids and the JSON layout stay byte
for byte.
"""

from __future__ import annotations

import difflib
import io
import json
import shutil
import subprocess
from contextlib import redirect_stderr, redirect_stdout

import pytest

from torchsync_lint.cli import main
from torchsync_lint.ipython import python_view
from torchsync_lint.notebook import parse_notebook

SETUP = [
    "%matplotlib inline\n",
    "import torch\n",
    "from torch.utils.data import DataLoader\n",
    'device = torch.device("cuda")',
]
MODEL = [
    "!pip install tqdm\n",
    "model = torch.nn.Linear(4, 2).to(device)\n",
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
    "loader = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True)",
]
TRAIN = [
    "%%time\n",
    "losses = []\n",
    "for x, y in loader:\n",
    "    x, y = x.to(device), y.to(device)\n",
    "    loss = torch.nn.functional.cross_entropy(model(x), y)\n",
    "    loss.backward()\n",
    "    opt.step()\n",
    "    losses.append(loss.item())",
]
OUTPUT = {"data": {"image/png": "iVBORw0KGgo=\n", "text/plain": ["<Figure size 640x480 with 1 Axes> é"]}, "metadata": {"needs_background": "light"}, "output_type": "display_data"}


def notebook(*sources, markdown_first: bool = True, language: str = "python", **dump) -> str:
    """A notebook as Jupyter writes it (indent=1, sorted keys, non-ASCII kept, final newline)."""
    cells = []
    if markdown_first:
        cells.append({"cell_type": "markdown", "id": "md0", "metadata": {}, "source": ["# Training\n", "Notes é."]})
    for n, source in enumerate(sources):
        cells.append({
            "cell_type": "code", "execution_count": n + 1, "id": f"cell{n}", "metadata": {"scrolled": True},
            "outputs": [OUTPUT] if n == 0 else [], "source": source,
        })
    nb = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": language, "name": "python3"},
                                       "language_info": {"name": language, "version": "3.11.7"}}, "nbformat": 4, "nbformat_minor": 5}
    options = {"indent": 1, "sort_keys": True, "ensure_ascii": False, **dump}
    return json.dumps(nb, **options) + "\n"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def write(tmp_path, text: str, name: str = "train.ipynb"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def changed_lines(old: str, new: str) -> list[tuple[str, str]]:
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append(("".join(a[i1:i2]), "".join(b[j1:j2])))
    return out


# -- check -------------------------------------------------------------------------------------------

def test_check_reports_a_hazard_at_its_cell_and_line(tmp_path):
    path = write(tmp_path, notebook(SETUP, MODEL, TRAIN))
    code, out, _ = run("check", "--isolated", str(path))
    assert code == 1
    # The markdown cell is cell 1, so the training cell is cell 4; `loss.item()` is its line 8.
    assert f"{path}:cell 4:8:19: TSL101 " in out
    assert f"{path}:cell 4:4:12: TSL301 " in out
    assert "        losses.append(loss.item())\n                      ^^^^^^^^^^^" in out  # the cell's own line
    code, out, _ = run("check", "--isolated", "--format", "json", str(path))
    rows = json.loads(out)
    assert {(r["path"], r["cell"], r["line"], r["column"], r["code"]) for r in rows} == {
        (str(path), 4, 4, 12, "TSL301"), (str(path), 4, 4, 26, "TSL301"), (str(path), 4, 8, 19, "TSL101"),
    }
    edits = [e for r in rows if r["fix"] for e in r["fix"]["edits"]]
    assert edits and all(e["cell"] == 4 and e["line"] == 4 for e in edits)


def test_python_files_keep_a_null_cell_in_json(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("".join(SETUP[1:]) + "\n" + "".join(MODEL[1:]) + "\n" + "".join(TRAIN[1:]) + "\n")
    rows = json.loads(run("check", "--isolated", "--format", "json", str(path))[1])
    assert rows and all(r["cell"] is None for r in rows) and all("cell" not in e for r in rows if r["fix"] for e in r["fix"]["edits"])


def test_directory_walk_finds_notebooks(tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", notebook(SETUP, MODEL, TRAIN))
    code, out, _ = run("check", "--isolated", "-q", str(tmp_path))
    assert code == 1 and f"{tmp_path / 'sub' / 'train.ipynb'}:cell 4:8:19: TSL101" in out


def test_cells_share_one_namespace_and_markdown_is_skipped(tmp_path):
    # The loader in one cell feeds the loop in another; a markdown cell mentioning `.item()`
    # and a %%bash cell are not Python.
    bash = ["%%bash\n", "for x in loader; do echo $(loss.item()); done"]
    path = write(tmp_path, notebook(SETUP, MODEL, bash, TRAIN))
    rows = json.loads(run("check", "--isolated", "--format", "json", str(path))[1])
    assert {(r["cell"], r["code"]) for r in rows} == {(5, "TSL301"), (5, "TSL101")}


def test_non_python_notebook_is_not_linted(tmp_path):
    path = write(tmp_path, notebook(SETUP, MODEL, TRAIN, language="R"))
    code, out, _ = run("check", "--isolated", str(path))
    assert code == 0 and "Found 0 findings" in out


def test_stdin_notebook(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(notebook(SETUP, MODEL, TRAIN)))
    code, out, _ = run("check", "--isolated", "-q", "-", "--stdin-filename", "nb/train.ipynb")
    assert code == 1 and "nb/train.ipynb:cell 4:8:19: TSL101" in out


def test_stdin_notebook_fix_and_diff(monkeypatch):
    original = notebook(SETUP, MODEL, TRAIN)
    monkeypatch.setattr("sys.stdin", io.StringIO(original))
    code, out, err = run("check", "--isolated", "--fix", "-", "--stdin-filename", "train.ipynb")
    assert code == 1 and "train.ipynb:cell 4:8:19: TSL101" in err
    assert changed_lines(original, out) == [('    "    x, y = x.to(device), y.to(device)\\n",\n', '    "    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\\n",\n')]
    monkeypatch.setattr("sys.stdin", io.StringIO(original))
    code, out, _ = run("check", "--isolated", "--diff", "-", "--stdin-filename", "train.ipynb")
    assert code == 1 and out.startswith("--- train.ipynb\n+++ train.ipynb\n@@ ")
    for text in ('{"cells": [', notebook(SETUP, MODEL, TRAIN, language="R")):
        monkeypatch.setattr("sys.stdin", io.StringIO(text))
        code, out, err = run("check", "--isolated", "--fix", "-", "--stdin-filename", "train.ipynb")
        assert (code, out) == ((2, "") if text.startswith("{") and len(text) < 20 else (0, text)), err


def test_sarif_github_junit_name_the_cell(tmp_path):
    path = write(tmp_path, notebook(SETUP, MODEL, TRAIN))
    log = json.loads(run("check", "--isolated", "--format", "sarif", str(path))[1])
    results = log["runs"][0]["results"]
    assert results and all(r["properties"]["cell"] == 4 for r in results)
    assert all(r["locations"][0]["logicalLocations"] == [{"name": "cell 4"}] for r in results)
    assert all(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("train.ipynb") for r in results)
    assert all("fixes" not in r for r in results)  # a viewer would apply them to the JSON's lines
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    schema = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    github = run("check", "--isolated", "--format", "github", str(path))[1]
    assert f"file={path},line=8,col=19,endLine=8,endColumn=30,title=TSL101 host-read-in-loop (cell 4)::" in github
    junit = run("check", "--isolated", "--format", "junit", str(path))[1]
    assert f'file="{path}" line="8"' in junit and "cell 4, line 8, col 19, " in junit


# -- IPython syntax ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "line",
    ["%matplotlib inline", "!pip install x", "files = !ls", "out = %sx ls", "model?", "torch.nn??", "?model", "%time f(x)",
     "/print 1", "    %timeit step()"],
)
def test_ipython_lines_become_neutral_lines_of_the_same_count(line):
    python, magics = python_view(f"a = 1\n{line}\nb = 2\n")
    assert python.count("\n") == 3 and python.startswith("a = 1\n") and python.endswith("\nb = 2\n")
    assert [original for original, _ in magics.values()] == [line]
    compile(python.replace("    ", "if 1:\n    ", 1) if line.startswith(" ") else python, "t", "exec")


@pytest.mark.parametrize(
    "cell",
    [
        "x = (a\n     % b)\n",  # a continuation line starting with `%` is the modulo operator
        "y = (a\n     != b)\n",
        's = """\n%matplotlib inline\n!pip\n"""\n',  # inside a string
        "z = [1,\n     2]  # what?\n",  # a comment ending in `?`
        "w = 1 + \\\n    2\n",
        "v = 1  # why?\n",
    ],
)
def test_python_that_looks_like_ipython_is_left_alone(cell):
    python, magics = python_view(cell)
    assert python == cell and magics == {}


def test_fix_keeps_magic_lines_and_never_edits_them(tmp_path):
    train = ["%%time\n", "for x, y in loader:\n", "    %time step = 1\n", "    !nvidia-smi\n", "    x = x.to(device)\n",
             "    model(x).sum().backward()\n", "model?"]
    original = notebook(SETUP, MODEL, train)
    path = write(tmp_path, original)
    code, out, err = run("check", "--isolated", "--fix", str(path))
    new = path.read_text(encoding="utf-8")
    assert changed_lines(original, new) == [('    "    x = x.to(device)\\n",\n', '    "    x = x.to(device, non_blocking=True)\\n",\n')]
    cells = json.loads(new)["cells"]
    assert cells[3]["source"][:4] == train[:4] and cells[3]["source"][6] == "model?"


# -- --fix ---------------------------------------------------------------------------------------------

def test_fix_preserves_outputs_metadata_ids_and_layout_byte_for_byte(tmp_path):
    original = notebook(SETUP, MODEL, TRAIN)
    path = write(tmp_path, original)
    code, out, _ = run("check", "--isolated", "--fix", str(path))
    assert code == 1 and "Fixed 2 findings (TSL301: 2)" in out and "train.ipynb:cell 4:8:19: TSL101" in out
    new = path.read_bytes().decode("utf-8")
    # Exactly one line of the file changed: the source line the fix edited.
    assert changed_lines(original, new) == [(
        '    "    x, y = x.to(device), y.to(device)\\n",\n',
        '    "    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\\n",\n',
    )]
    before, after = json.loads(original), json.loads(new)
    after["cells"][3]["source"][3] = before["cells"][3]["source"][3]
    assert before == after
    # Idempotent: a second run changes nothing.
    assert run("check", "--isolated", "--fix", str(path))[0] == 1
    assert path.read_bytes().decode("utf-8") == new


@pytest.mark.parametrize(
    "dump",
    [
        {"indent": 2, "sort_keys": False},
        {"indent": None, "separators": (",", ":")},  # minified, one line
        {"indent": 1, "ensure_ascii": True},  # `\u00e9` escapes stay escapes
    ],
    ids=["indent2", "minified", "ascii"],
)
def test_other_layouts_survive_a_fix(tmp_path, dump):
    loader_cell = ["loader = DataLoader(ds, batch_size=8, num_workers=2)\n", "print('é')"]
    original = notebook(SETUP, ["model = torch.nn.Linear(4, 2).to(device)"], loader_cell, TRAIN[1:], **dump)
    path = write(tmp_path, original)
    run("check", "--isolated", "--fix", str(path))
    new = path.read_text(encoding="utf-8")
    expected = json.loads(original)
    expected["cells"][3]["source"][0] = 'loader = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=device.type == "cuda")\n'
    expected["cells"][4]["source"][2] = "    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n"
    assert json.loads(new) == expected
    # Re-serialising the expected notebook the same way gives the file byte for byte: only the
    # two edited strings differ from the original text.
    assert new == json.dumps(expected, **{"indent": 1, "sort_keys": True, "ensure_ascii": False, **dump}) + "\n"


def test_string_source_crlf_file_and_an_added_import(tmp_path):
    # `source` as one string (allowed by nbformat), CRLF line ends in the file, and an unsafe
    # fix that needs `import os` (it goes into the cell with the imports).
    original = notebook("import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device('cuda')",
                        "model = torch.nn.Linear(4, 2).to(device)\nloader = DataLoader(ds, batch_size=8, pin_memory=True)",
                        "".join(TRAIN[1:]), markdown_first=False).replace("\n", "\r\n")
    path = write(tmp_path, original)
    code, out, _ = run("check", "--isolated", "--fix", "--unsafe-fixes", str(path))
    new = path.read_bytes().decode("utf-8")
    cells = [c["source"] for c in json.loads(new)["cells"]]
    assert cells[0] == "import torch\nfrom torch.utils.data import DataLoader\nimport os\ndevice = torch.device('cuda')"
    assert "num_workers=min(8, os.cpu_count() or 1)" in cells[1]
    assert [len(pair) for pair in changed_lines(original, new)] == [2, 2, 2]  # three source lines, nothing else
    assert "\r\n" in new and "\n" not in new.replace("\r\n", "")


def test_diff_of_a_notebook_applies_with_patch(tmp_path, monkeypatch):
    if shutil.which("patch") is None:
        pytest.skip("patch is not installed")
    original = notebook(SETUP, MODEL, TRAIN)
    write(tmp_path, original)
    fixed_dir = tmp_path / "fixed"
    fixed_dir.mkdir()
    write(fixed_dir, original)
    monkeypatch.chdir(tmp_path)
    code, diff, _ = run("check", "--isolated", "--diff", "train.ipynb")
    assert code == 1 and diff.startswith("--- train.ipynb\n+++ train.ipynb\n@@ ")
    assert (tmp_path / "train.ipynb").read_text(encoding="utf-8") == original  # --diff writes nothing
    subprocess.run(["patch", "-p0", "--quiet"], input=diff, text=True, cwd=tmp_path, check=True)
    run("check", "--isolated", "--fix", str(fixed_dir / "train.ipynb"))
    assert (tmp_path / "train.ipynb").read_bytes() == (fixed_dir / "train.ipynb").read_bytes()


# -- errors ----------------------------------------------------------------------------------------------

def test_syntax_error_in_a_cell_is_tsl900_at_that_cell(tmp_path):
    broken = ["for x in loader:\n", "    loss = model(x\n", "    loss.backward()"]
    path = write(tmp_path, notebook(SETUP, MODEL, broken, TRAIN))
    code, out, err = run("check", "--isolated", str(path))
    assert code == 2, out + err
    (line,) = [ln for ln in out.splitlines() if "TSL900" in ln and not ln.startswith("Found ")]
    assert line.startswith(f"{path}:cell 4:2:") and "cannot parse cell 4" in line and "never closed" in line
    code, out, err = run("check", "--isolated", "--fix", str(path))
    assert code == 2 and "cell 4:2:" in out + err and "Traceback" not in out + err
    assert path.read_text(encoding="utf-8") == notebook(SETUP, MODEL, broken, TRAIN)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"cells": [', "malformed JSON"),
        ('{"nbformat": 3, "worksheets": []}', "nbformat 3 is not supported"),
        ('["not", "a", "notebook"]', 'no "cells" list'),
        ('{"cells": [{"cell_type": "code", "source": 5}]}', "not text"),
    ],
)
def test_malformed_notebook_is_a_clear_per_file_error(tmp_path, text, message):
    bad = write(tmp_path, text, "bad.ipynb")
    good = write(tmp_path, notebook(SETUP, MODEL, TRAIN))
    code, out, err = run("check", "--isolated", "-q", str(bad), str(good))
    assert code == 1  # the good notebook's findings still count
    assert f"{bad}:1:1: TSL901 not a valid notebook: " in out and message in out
    assert f"{good}:cell 4:8:19: TSL101" in out
    code, out, err = run("check", "--isolated", "--fix", str(bad))
    assert code == 2 and message in out + err and bad.read_text() == text


def test_parse_notebook_maps_every_code_cell():
    nb = parse_notebook(notebook(SETUP, MODEL, TRAIN))
    assert [c.index for c in nb.cells] == [2, 3, 4]
    markers = [f"# @tsl-cell {index} {nb.nonce}" for index in (2, 3, 4)]
    assert [line for line in nb.python.splitlines() if line.startswith("#")] == markers
    assert nb.nonce not in nb.text


def test_a_notebook_without_torch_is_not_parsed(tmp_path):
    # As for a .py file: no trigger word, no parse, so no TSL900 for a non-PyTorch notebook.
    path = write(tmp_path, notebook(["x = (1,\n"], ["%matplotlib inline\n", "print(2)"]))
    code, out, _ = run("check", "--isolated", str(path))
    assert code == 0 and "Found 0 findings" in out
