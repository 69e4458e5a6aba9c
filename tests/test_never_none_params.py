"""`if mask is None: mask = torch.ones(n).to(x.device)` in a helper every caller hands a mask
tensor (glow-tts's `squeeze(x, x_mask=None)`) never runs: no finding there. One caller that
leaves the mask to its default, or passes `None`, makes it run again."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsync_lint.api import lint_paths, lint_text
from torchsync_lint.config import Config

HELPER_IS_NONE = '''\
def masked(x, mask=None):
    if mask is None:
        mask = torch.ones(x.shape[0]).to(x.device)
    return x * mask
'''
HELPER_IS_NOT_NONE = '''\
def masked(x, mask=None):
    if mask is not None:
        mask = mask[:, None]
    else:
        mask = torch.ones(x.shape[0]).to(x.device)
    return x * mask
'''

LOOP = '''\
import torch

{helper}

device = torch.device("cuda")
model = torch.nn.Linear(8, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    x = torch.randn(16, 8, device=device)
    m = torch.rand(16, device=device) > 0.1
    y = {call}
    model(y).sum().backward()
    opt.step()
'''


def _fill_line(source: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if "torch.ones(x.shape[0])" in line)


@pytest.mark.parametrize("helper", [HELPER_IS_NONE, HELPER_IS_NOT_NONE], ids=["is None", "is not None / else"])
@pytest.mark.parametrize("call", ["masked(x, m)", "masked(x, mask=m)", "masked(x, mask=m.float())"])
def test_a_fill_for_a_mask_no_caller_leaves_out_never_runs(helper, call):
    source = LOOP.format(helper=helper, call=call)
    assert [f.code for f in lint_text(source, "train.py", Config()) if f.line == _fill_line(source)] == []


@pytest.mark.parametrize("helper", [HELPER_IS_NONE, HELPER_IS_NOT_NONE], ids=["is None", "is not None / else"])
@pytest.mark.parametrize("call", ["masked(x)", "masked(x, None)", "masked(x, m) + masked(x)"])
def test_a_caller_without_a_mask_runs_the_fill(helper, call):
    source = LOOP.format(helper=helper, call=call)
    assert [f.code for f in lint_text(source, "train.py", Config()) if f.line == _fill_line(source)] == ["TSL305"]


@pytest.mark.parametrize("call, found", [("masked(x, m)", False), ("masked(x)", True)])
def test_the_callers_of_another_module_decide_too(tmp_path, call, found):
    (tmp_path / "pyproject.toml").write_text("[tool.torchsync-lint]\n")
    (tmp_path / "commons.py").write_text("import torch\n\n\n" + HELPER_IS_NONE)
    (tmp_path / "train.py").write_text(LOOP.format(helper="from commons import masked", call=call))
    results = {Path(r.path).name: r for r in lint_paths([str(tmp_path)], Config(), jobs=1, use_cache=False)}
    codes = [(f.line, f.code) for f in results["commons.py"].findings]
    assert codes == ([(6, "TSL305")] if found else [])
