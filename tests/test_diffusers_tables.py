"""diffusers schedulers keep their tables as CPU tensors (knowledge/diffusers.py): indexing one
and copying it each step is a blocking host-to-device copy. `alphas_cumprod` is the exception:
`add_noise` moves it to the samples' device on its first call, so it is not reported."""

from __future__ import annotations

import pytest

from torchsync_lint.api import lint_text
from torchsync_lint.config import Config

LOOP = '''\
import torch
from diffusers import DDPMScheduler

device = torch.device("cuda")
model = torch.nn.Linear(8, 8).to(device)
scheduler = DDPMScheduler(num_train_timesteps=1000)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    x = torch.randn(4, 8, device=device)
    t = torch.randint(0, 1000, (4,), device=device)
    noisy = scheduler.add_noise(x, torch.randn_like(x), t)
    w = {table}
    (model(noisy) * w[:, None]).sum().backward()
    opt.step()
'''


@pytest.mark.parametrize("table", ["scheduler.betas[t.cpu()].to(device)", "scheduler.timesteps[:4].to(device)"])
def test_a_scheduler_table_copied_per_step_is_reported(table):
    found = [(f.line, f.code) for f in lint_text(LOOP.format(table=table), "train.py", Config())]
    assert (12, "TSL301") in found


def test_alphas_cumprod_is_where_add_noise_put_it():
    found = [(f.line, f.code) for f in lint_text(LOOP.format(table="scheduler.alphas_cumprod[t].to(device)"), "train.py", Config())]
    assert (12, "TSL301") not in found
