"""The demand-driven project view (project/demand.py, project/outline.py): a module's view
holds the modules an answer about it may need, found name by name through re-exports and
`_LazyModule` import structures, up to `project-depth` imports away; no other module is read
or summarised."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchsync_lint.api import config_for
from torchsync_lint.config import Config
from torchsync_lint.project import session as session_module
from torchsync_lint.project.outline import outline
from torchsync_lint.project.session import Session

N = 50


def _write(root: Path, files: dict[str, str], pyproject: str = "") -> None:
    (root / "pyproject.toml").write_text(pyproject)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _modules(body: str = "def f{i}(t):\n    return t.item()\n") -> dict[str, str]:
    return {f"lib/m{i}.py": "import torch\n\n\n" + body.format(i=i) for i in range(N)}


EAGER_INIT = "".join(f"from .m{i} import f{i}\n" for i in range(N))
LAZY_INIT = (
    "import sys\nfrom typing import TYPE_CHECKING\n\nfrom .utils import _LazyModule\n\n"
    "_import_structure = {" + ", ".join(f'"m{i}": ["f{i}"]' for i in range(N // 2)) + "}\n"
    + "".join(f'_import_structure["m{i}"] = ["f{i}"]\n' for i in range(N // 2, N))
    + "\nif TYPE_CHECKING:\n" + "".join(f"    from .m{i} import f{i}\n" for i in range(N))
    + "else:\n    sys.modules[__name__] = _LazyModule(__name__, globals()['__file__'], _import_structure, module_spec=__spec__)\n"
)
LAZY_ONLY_INIT = LAZY_INIT.split("\nif TYPE_CHECKING:")[0] + "\nsys.modules[__name__] = _LazyModule(__name__, globals()['__file__'], _import_structure)\n"
UTILS = "class _LazyModule:\n    def __init__(self, *args, **kwargs):\n        pass\n"

SCRIPT = """\
import torch
{imports}

model = torch.nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(8, 4, device="cuda")
    loss = model(x).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    v = {call}(loss)
"""


def _count_work(monkeypatch) -> tuple[list[str], list[str]]:
    """(the modules summarised, the modules whose outlines were read), as the session does them."""
    summarised: list[str] = []
    outlined: list[str] = []
    real_summarize, real_outline = session_module.Session._summarize, session_module.Session._outline
    monkeypatch.setattr(session_module.Session, "_summarize", lambda self, rel, text: summarised.append(rel) or real_summarize(self, rel, text))

    def counted_outline(self, rel):
        if rel not in self._outlines:
            outlined.append(rel)
        return real_outline(self, rel)

    monkeypatch.setattr(session_module.Session, "_outline", counted_outline)
    return summarised, outlined


@pytest.mark.parametrize("init, extra", [(EAGER_INIT, {}), (LAZY_INIT, {"lib/utils.py": UTILS}), (LAZY_ONLY_INIT, {"lib/utils.py": UTILS})], ids=["re-exports", "lazy with TYPE_CHECKING", "lazy only"])
@pytest.mark.parametrize("imports, call", [("from lib import f7", "f7"), ("import lib", "lib.f7"), ("import lib as L", "L.f7")])
def test_a_script_importing_one_name_of_a_large_package_reads_only_that_name_s_module(tmp_path, monkeypatch, init, extra, imports, call):
    _write(tmp_path, {**_modules(), "lib/__init__.py": init, **extra, "train.py": SCRIPT.format(imports=imports, call=call)})
    summarised, outlined = _count_work(monkeypatch)
    session = Session(tmp_path, Config(), files=[str(tmp_path / "train.py")])
    findings = session.lint(str(tmp_path / "train.py")).findings
    assert session.scope("train.py").modules == ("lib/__init__.py", "lib/m7.py", "train.py")
    assert session.view("train.py").resolve_name("lib.f7", "train.py") == ("function", "lib/m7.py", "f7")
    assert sorted(set(summarised)) == ["lib/__init__.py", "lib/m7.py", "train.py"]
    # the script's outline, the package's, the one module named; no other module mentions `train`
    assert sorted(set(outlined)) == ["lib/__init__.py", "lib/m7.py", "train.py"]
    helper = Session(tmp_path, Config(), use_cache=False).lint(str(tmp_path / "lib" / "m7.py")).findings
    assert [f.code for f in helper] == ["TSL101"]  # the `.item()` runs every step: the script is in its scope
    assert findings == Session(tmp_path, Config(), use_cache=False).lint(str(tmp_path / "train.py")).findings  # (alone or in a whole run)


def test_a_helper_s_scope_holds_the_scripts_that_call_it_and_nothing_they_do_not_reach(tmp_path):
    _write(tmp_path, {**_modules(), "lib/__init__.py": EAGER_INIT, "train.py": SCRIPT.format(imports="from lib import f7", call="f7"), "other.py": "from lib import f3\n"})
    session = Session(tmp_path, Config(), use_cache=False)
    scope = session.scope("lib/m7.py")
    assert scope.callers == ("lib/__init__.py", "lib/m7.py", "train.py")  # (the package re-exports it: a user of the name)
    assert "other.py" not in scope.modules and "lib/m3.py" not in scope.modules
    assert not session.linked("lib/m40.py") or "train.py" not in session.scope("lib/m40.py").modules


def test_a_name_only_type_checking_imports_is_not_followed(tmp_path):
    module = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from lib.m3 import f3\n\nfrom lib.m4 import f4\n\n\ndef g(t: 'f3'):\n    return f4(t)\n"
    _write(tmp_path, {**_modules(), "lib/__init__.py": "", "user.py": module})
    session = Session(tmp_path, Config(), use_cache=False)
    assert session.scope("user.py").modules == ("lib/m4.py", "user.py")


def test_a_lazy_structure_that_is_not_a_literal_stays_unknown(tmp_path):
    init = "from .utils import _LazyModule\n\n_import_structure = build()\nimport sys\nsys.modules[__name__] = _LazyModule(__name__, __file__, _import_structure)\n"
    _write(tmp_path, {**_modules(), "lib/__init__.py": init, "lib/utils.py": UTILS, "train.py": SCRIPT.format(imports="from lib import f7", call="f7")})
    session = Session(tmp_path, Config(), use_cache=False)
    assert "lib/m7.py" not in session.scope("train.py").modules
    assert session.view("train.py").resolve_name("lib.f7", "train.py") is None


def test_the_outline_reads_a_lazy_structure_and_what_runs():
    text = textwrap.dedent("""\
        from typing import TYPE_CHECKING
        import a.b.c
        import pkg as p
        from .x import y as z
        _import_structure = {"models": ["UNet", "VAE"], "utils": []}
        try:
            import torch
        except ImportError:
            pass
        else:
            _import_structure["models"].extend(["Extra"])
        _import_structure["pipes"] = ["Pipe"]
        if TYPE_CHECKING:
            from .models import UNet
        else:
            sys.modules[__name__] = _LazyModule(__name__, __file__, _import_structure)

        def f():
            from .inner import g
            return p.sub.h() + a.b.c.d
        """)
    got = outline(text)
    assert got["lazy"] == {"UNet": ".models.UNet", "VAE": ".models.VAE", "Extra": ".models.Extra", "Pipe": ".pipes.Pipe"}
    assert got["binds"] == {"a": "a", "p": "pkg", "z": ".x.y", "torch": "torch", "TYPE_CHECKING": "typing.TYPE_CHECKING"}
    assert ".models.UNet" not in got["demands"] and ".inner.g" in got["demands"]
    assert {"pkg.sub.h", "a.b.c.d", ".x.y"} <= set(got["demands"]) and "pkg" not in got["demands"]  # (a package imported whole: the names read through it)
    assert "f" in got["defines"] and "_import_structure" in got["defines"]


def _chain(root: Path, length: int, pyproject: str = "") -> None:
    files = {"train.py": SCRIPT.format(imports="from c0 import f0", call="f0")}
    for i in range(length):
        nxt = f"from c{i + 1} import f{i + 1}\n\n\ndef f{i}(t):\n    return f{i + 1}(t)\n" if i + 1 < length else f"def f{i}(t):\n    return t.item()\n"
        files[f"c{i}.py"] = "import torch\n" + nxt
    _write(root, files, pyproject)


@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_project_depth_bounds_how_far_a_name_is_followed(tmp_path, depth):
    _chain(tmp_path, 5, f"[tool.torchsync-lint]\nproject-depth = {depth}\n")
    config = config_for([str(tmp_path)])
    assert config.for_path(str(tmp_path)).project_depth == depth
    session = Session(tmp_path, config, use_cache=False)
    assert session.scope("train.py").modules == tuple(sorted(["train.py", *(f"c{i}.py" for i in range(depth))]))
    # backwards, however far: the script's loop decides that the chain's end runs every step
    assert session.scope("c4.py").callers == ("c0.py", "c1.py", "c2.py", "c3.py", "c4.py", "train.py")
    assert session.linked("train.py") == (depth > 0)


def test_project_depth_must_be_a_whole_number(tmp_path):
    from torchsync_lint.config import ConfigError

    (tmp_path / "pyproject.toml").write_text("[tool.torchsync-lint]\nproject-depth = -1\n")
    with pytest.raises(ConfigError, match="project-depth"):
        config_for([str(tmp_path)]).for_path(str(tmp_path))


def test_an_edit_of_a_module_outside_the_scope_keeps_the_cached_result(tmp_path):
    _write(tmp_path, {**_modules(), "lib/__init__.py": EAGER_INIT, "train.py": SCRIPT.format(imports="from lib import f7", call="f7")})
    script = str(tmp_path / "train.py")
    before = Session(tmp_path, Config(), files=[script]).dependencies("train.py")
    (tmp_path / "lib" / "m3.py").write_text("import torch\n\n\ndef f3(t):\n    return t\n")  # not in the scope
    assert Session(tmp_path, Config(), files=[script]).dependencies("train.py") == before
    (tmp_path / "lib" / "m7.py").write_text("import torch\n\n\ndef f7(t):\n    return t\n")  # in it
    assert Session(tmp_path, Config(), files=[script]).dependencies("train.py") != before


def test_a_module_handed_on_whole_is_used_whole(tmp_path):
    # `getattr(losses, name)` may read any name of it: the module is used, its imports followed
    script = "import lib.m3\nimport lib.m4 as four\n\n\ndef pick(name):\n    return getattr(lib.m3, name), four\n"
    _write(tmp_path, {**_modules(), "lib/__init__.py": EAGER_INIT, "user.py": script})
    session = Session(tmp_path, Config(), use_cache=False)
    assert session.scope("user.py").modules == ("lib/m3.py", "lib/m4.py", "user.py")
    assert set(outline(script)["demands"]) == {"lib.m3", "lib.m4"}
