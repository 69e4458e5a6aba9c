"""Two rules of what a value is, from the first run on round 13 (issue 38):

- A tensor constructor over the loader's batch (`torch.LongTensor(labels).to(device)`, chained
  or named, also through NumPy views and casts: `torch.FloatTensor(np.transpose(imgs, ...))`) is the data itself, cast: its blocking copy is TSL301's, one finding, never also
  TSL305's ("built on the host"), which stays for data built in the step (a list, `np.ones`).
- A predicate of the standard library (`inspect.isfunction(d)`, `operator.is_(a, b)`) returns a
  Python bool whatever it is given: no device truth value (TSL102). An opaque function of a
  device tensor, and torch's own `isnan(...).any()`, still are.
"""

from __future__ import annotations

import pytest

from tests._marked import marked_findings

LOADER_LOOP = '''import inspect
import operator

import numpy as np
import torch


def train(model, loader, opt, device, helper):
    model = model.to(device)
    for data, labels in loader:
        out = model(data.to(device, non_blocking=True))
{body}
        loss = out.sum()
        loss.backward()
        opt.step()
'''


def _marked(body: str) -> list[tuple[str, str]]:
    source = LOADER_LOOP.format(body=body)
    return marked_findings(source)


@pytest.mark.parametrize("body", [
    "        y = torch.LongTensor(labels).to(device)  # flag",
    "        y = torch.tensor(labels).cuda()  # flag",
    "        y = torch.FloatTensor(labels)\n        y = y.to(device)  # flag",
    "        y = torch.FloatTensor(np.transpose(labels, (0, 2, 1))).to(device)  # flag",
    "        y = torch.tensor(np.asarray(labels).astype(np.int64)).cuda()  # flag",
], ids=["legacy-chained", "tensor-chained", "legacy-named", "numpy-transposed", "numpy-cast"])
def test_a_constructor_of_the_batch_is_one_batch_copy(body):
    assert _marked(body) == [("TSL301", "flag")]


@pytest.mark.parametrize("body", [
    "        y = torch.LongTensor([1, 2, 3]).to(device)  # flag",
    "        y = torch.FloatTensor(np.ones(4)).to(device)  # flag",
    "        lens = [len(d) for d in data]\n        y = torch.tensor(lens).to(device)  # flag",
    "        y = torch.FloatTensor(np.transpose(np.ones((2, 3)), (1, 0))).to(device)  # flag",
], ids=["display", "numpy-fill", "list-built-in-step", "transposed-fill"])
def test_data_built_in_the_step_stays_tsl305(body):
    assert _marked(body) == [("TSL305", "flag")]


@pytest.mark.parametrize("body", [
    "        if inspect.isfunction(out):  # clean\n            pass",
    "        if inspect.isclass(out):  # clean\n            pass",
    "        if operator.is_(out, None):  # clean\n            pass",
], ids=["isfunction", "isclass", "operator-is"])
def test_a_stdlib_predicate_of_a_device_tensor_is_a_python_bool(body):
    assert _marked(body) == []


@pytest.mark.parametrize("body", [
    "        if helper(out):  # flag\n            pass",
    "        if torch.isnan(out).any():  # flag\n            pass",
], ids=["opaque-function", "torch-isnan"])
def test_a_device_result_still_is_a_truth_value_read(body):
    assert _marked(body) == [("TSL102", "flag")]
