"""A module placed on the device is the same object (issue 38, "a module's `.to()`"): whatever
spelling moves it, calling it runs its class's `forward`, here and in another module.

- `net = Net(...); net = net.to(device)` (the name rebound to itself placed), `net = net.cuda()`,
  an alias `model = net`;
- `net = Net(...); net.to(device)` as a statement, with the class in another module (the
  project view names the callee through the move).

The forward builds its timesteps on the host and copies them (TSL305) every step. VALID
near-misses: the name rebound to something else (`net = wrap(net)`, an unknown maker), and the
same object never called in the step loop."""

from __future__ import annotations

import pytest

from tests.test_objects import project

MODEL = """\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self, n_T):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.n_T = n_T

        def forward(self, x):
            ts = torch.randint(1, self.n_T + 1, (x.shape[0],)).to(x.device)
            return self.lin(x).mean() + ts.float().mean()
"""

LOOP = """\
    import torch
    from torch.utils.data import DataLoader
    {imports}


    def main(dataset, wrap):
        device = "cuda:0"
        net = Net(1000)
        {place}
        optim = torch.optim.Adam(net.parameters(), lr=1e-5)
        loader = DataLoader(dataset, batch_size=128, num_workers=4, pin_memory=True)
        for x, _ in loader:
            x = x.to(device, non_blocking=True)
            loss = {called}(x)
            loss.backward()
            optim.step()
"""

PLACEMENTS = {
    "rebound-to": ("net = net.to(device)", "net"),
    "rebound-cuda": ("net = net.cuda()", "net"),
    "alias": ("model = net.to(device)", "model"),
    "statement": ("net.to(device)", "net"),
}


def _files(place: str, called: str, split: bool) -> dict[str, str]:
    if split:
        return {"models.py": MODEL, "train.py": LOOP.format(imports="from models import Net", place=place, called=called)}
    model_lines = MODEL.splitlines(keepends=True)
    loop = LOOP.format(imports="", place=place, called=called)
    return {"train.py": "".join(model_lines) + "\n\n" + "".join(loop.splitlines(keepends=True)[1:])}


@pytest.mark.parametrize("split", [False, True], ids=["one-module", "two-modules"])
@pytest.mark.parametrize("name", list(PLACEMENTS))
def test_a_placed_module_runs_its_forward_per_step(tmp_path, capsys, name, split):
    place, called = PLACEMENTS[name]
    found = project(tmp_path, _files(place, called, split), capsys, select="TSL305")
    where = "models.py" if split else "train.py"
    assert found == {(where, 12, "TSL305"): 1}, found


@pytest.mark.parametrize("split", [False, True], ids=["one-module", "two-modules"])
@pytest.mark.parametrize("place,called", [
    ("net = wrap(net)", "net"),  # rebound to what an unknown function returns
    ("other = wrap(net)", "other"),  # another name, bound to something unknown
], ids=["rebound-to-unknown", "unknown-alias"])
def test_a_name_rebound_to_something_else_is_not_the_module(tmp_path, capsys, place, called, split):
    assert project(tmp_path, _files(place, called, split), capsys, select="TSL305") == {}


def test_a_placed_module_not_called_per_step_stays_silent(tmp_path, capsys):
    files = _files("net = net.to(device)", "torch.nn.functional.relu", split=True)
    assert project(tmp_path, files, capsys, select="TSL305") == {}
