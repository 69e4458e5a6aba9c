"""A helper that returns one of its parameters by a choice (`def default(v, d): return v if
exists(v) else d`, `return v or d`) returns, at each call, one of *that call's* arguments: used
with device tensors in one place and with a module's integer setting in another, it does not make
the setting a device value (e2-tts: `assert inp.shape[-1] == self.num_channels` with
`self.num_channels = default(num_channels, self.mel_spec.n_mel_channels)`). Device arguments still
give device results."""

from __future__ import annotations

import pytest

from tests._marked import marked_findings

HEAD = '''import torch


def exists(v):
    return v is not None


def default(v, d):
    return v if exists(v) else d


def either(v, d):
    return v or d


model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
channels = default(None, 4)
width = either(None, 4)
for step in range(100):
    x = torch.randn(8, 4, device="cuda")
    out = default(None, model(x))
    alt = either(None, model(x))
{body}
    out.sum().backward()
    opt.step()
'''


@pytest.mark.parametrize("body,expected", [
    ("    if x.shape[-1] == channels:  # clean\n        pass", []),
    ("    if x.shape[-1] == width:  # clean\n        pass", []),
    ("    print(out.sum().item())  # flag", [("TSL101", "flag")]),
    ("    print(alt.sum().item())  # flag", [("TSL101", "flag")]),
], ids=["ifexp-number", "or-number", "ifexp-device", "or-device"])
def test_a_choice_of_parameters_returns_this_calls_argument(body, expected):
    assert marked_findings(HEAD.format(body=body)) == expected
