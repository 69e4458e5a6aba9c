"""The rule catalog (codes as data, for start-up) says exactly what the rule classes say."""

from __future__ import annotations

import subprocess
import sys

from torchsync_lint.catalog import rule_table
from torchsync_lint.config import Config
from torchsync_lint.rule import load_rules


def test_catalog_matches_the_registered_rules():
    rules = load_rules()
    table = rule_table()
    assert list(table) == list(rules)
    for code, rule in rules.items():
        assert (table[code].name, table[code].default_enabled) == (rule.name, rule.default_enabled), code


def test_selection_from_the_catalog_equals_selection_from_the_rules():
    rules, table = load_rules(), rule_table()
    configs = [
        Config(),
        Config(select=["TSL1"], ignore=["TSL104"], per_file_ignores={"tests/*": ["TSL2"], "!src/*": ["host-read-in-loop"]}),
        Config(select=["ALL"], extend_select=["TSL305"]),
    ]
    for config in configs:
        for path in ("src/train.py", "tests/test_x.py", "other.py"):
            assert config.codes_for_path(path, table) == config.codes_for_path(path, rules)


def test_a_fully_cached_run_imports_neither_libcst_nor_the_rules(tmp_path):
    """The second run over an unchanged project reads every result from the cache: start-up is
    then most of its time, so it must not load the parser and the rules it does not use."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "train.py").write_text("import torch\nfrom helpers import scale\nfor x in loader:\n    print(scale(x).item())\n")
    (tmp_path / "helpers.py").write_text("import torch\ndef scale(x):\n    return x.cuda() * 2\n")
    probe = (
        "import sys\nfrom torchsync_lint.cli import main\n"
        "code = main(['check', '--format', 'json', '.'])\n"
        "print('LOADED', sorted(m for m in ('libcst', 'torchsync_lint.rules', 'torchsync_lint.engine', 'torch') if m in sys.modules), code)\n"
    )
    first = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    second = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "LOADED ['libcst', 'torchsync_lint.engine', 'torchsync_lint.rules'] 1" in first.stdout, first.stdout + first.stderr
    assert "LOADED [] 1" in second.stdout, second.stdout + second.stderr
    assert first.stdout.split("LOADED")[0] == second.stdout.split("LOADED")[0]  # the same report
