"""Where a value lives, decided by the code around it rather than by one call site:

- a helper of tensor arithmetic on its parameters alone computes where its operands are: given
  a host tensor (and nothing on the device) it returns host values, whatever other callers pass
  (`iou(boxes.cpu(), anchors)` beside `iou(pred, boxes)`);
- a binding read past an `if` that converts the tensor it may hold (`if torch.is_tensor(x): x =
  x.cpu().numpy()`, `if type(x).__name__ != 'ndarray': ...`) holds no tensor there;
- what follows a memo's early return (`if key in self.cache: return self.cache[key]` ...
  `self.cache[key] = v`) runs once per key, not once per step;
- a tensor built on the host and cast (`torch.tensor(0).to(dtype).cuda()`), or allocated from a
  size extended by a tuple (`torch.FloatTensor(x.size() + (n,)).zero_()`), then copied, is
  TSL305's (built on the host), not TSL301's (a batch copy).

Each with VALID near-misses: the same shapes where the value does live on the device.
"""

from __future__ import annotations

import pytest

from torchsync_lint.api import lint_text
from torchsync_lint.config import Config

LOOP = '''
model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    x = torch.randn(8, 4, device="cuda")
    out = model(x)
{body}
    out.sum().backward()
    opt.step()
'''


def _findings(helpers: str, body: str) -> list[tuple[int, str]]:
    source = "import numpy as np\nimport torch\n\n" + helpers + LOOP.format(body=body)
    lines = source.splitlines()
    return sorted((f.line, f.code) for f in lint_text(source, "train.py", Config()) if "# flag" in lines[f.line - 1] or "# clean" in lines[f.line - 1])


def _marked(helpers: str, body: str) -> tuple[list[tuple[int, str]], list[int]]:
    source = "import numpy as np\nimport torch\n\n" + helpers + LOOP.format(body=body)
    flagged = [(i, line.split("# flag: ")[1].split()[0]) for i, line in enumerate(source.splitlines(), 1) if "# flag: " in line]
    return flagged, _findings(helpers, body)


# -- helpers computing where their operands are ----------------------------------------------
IOU_DEF = '''
def iou(a, b):
    if a.shape[1] != 4:
        raise IndexError
    tl = torch.max(a[:, None, :2], b[:, :2])
    br = torch.min(a[:, None, 2:], b[:, 2:])
    inter = (tl < br).type(tl.type()).prod(dim=2)
    return inter / (torch.prod(a[:, 2:] - a[:, :2], 1)[:, None] + 1e-9)
'''

IOU_LAMBDA_FREE = '''
def iou(a, b):
    return torch.clamp(a @ b.T, min=0).to(a.dtype)
'''

IOU_METHOD = '''
class Matcher:
    def __init__(self):
        self.anchors = torch.rand(9, 4)

    @staticmethod
    def iou(a, b):
        return torch.max(a[:, None, :2], b[:, :2]).sum(-1)

    def match(self, boxes):
        return self.iou(boxes.cpu(), self.anchors)


matcher = Matcher()
'''


@pytest.mark.parametrize(
    "helpers, call",
    [
        (IOU_DEF, "iou(x.cpu(), anchors)"),
        (IOU_LAMBDA_FREE, "iou(x.detach().cpu(), anchors)"),
        (IOU_DEF, "iou(a=x.cpu(), b=anchors)"),
    ],
    ids=["function", "one-line function", "keywords"],
)
def test_a_helper_given_host_tensors_returns_host_values(helpers, call):
    body = f"    on_host = {call}\n    if on_host.sum() == 0:  # clean\n        continue\n    on_device = iou(out, x)\n    if on_device.max() > 0.5:  # flag: TSL102\n        print(step)"
    flagged, found = _marked(helpers + "\n\nanchors = torch.rand(9, 4)\n", body)
    assert [c for _, c in found] == ["TSL102"] and found == flagged


def test_a_method_given_host_tensors_returns_host_values():
    body = "    best = matcher.match(x)\n    if best.argmax() == 0:  # clean\n        print(step)"
    assert _findings(IOU_METHOD, body) == []


READS_A_GLOBAL = '''
PRIOR = torch.rand(9, 4).cuda()


def iou(a, b):
    return torch.max(a[:, None, :2], PRIOR[:, :2]).sum(-1)
'''

MOVES = '''
def iou(a, b):
    return torch.max(a[:, None, :2].cuda(), b[:, :2].cuda()).sum(-1)
'''

PLACES_BY_DEVICE = '''
def iou(a, b):
    return torch.zeros(3, device="cuda") + a.sum()
'''


@pytest.mark.parametrize("helpers", [READS_A_GLOBAL, MOVES, PLACES_BY_DEVICE], ids=["reads a global device tensor", "copies", "device="])
def test_a_helper_that_reaches_the_device_still_returns_device_values(helpers):
    body = "    v = iou(x.cpu(), x.cpu())\n    if v.max() > 0:  # flag: TSL102\n        print(step)"
    flagged, found = _marked(helpers, body)
    assert found == flagged


def test_a_helper_given_a_device_tensor_returns_device_values():
    body = "    v = iou(out, torch.rand(9, 4))\n    if v.max() > 0:  # flag: TSL102\n        print(step)"
    flagged, found = _marked(IOU_DEF, body)
    assert found == flagged


# -- reads past a conversion ---------------------------------------------------------------------
TYPE_NAME = '''
def post(output):
    boxes = output[0]
    if type(boxes).__name__ != "ndarray":
        boxes = boxes.cpu().detach().numpy()
    return [boxes[i, 0] for i in range(boxes.shape[0])]
'''

IS_TENSOR = '''
def post(output):
    boxes = output[0]
    if torch.is_tensor(boxes):
        boxes = boxes.detach().cpu().numpy()
    return [boxes[i, 0] for i in range(boxes.shape[0])]
'''

NOT_NDARRAY = '''
def post(output):
    boxes = output[0]
    if not isinstance(boxes, np.ndarray):
        boxes = boxes.cpu().numpy()
    return [boxes[i, 0] for i in range(boxes.shape[0])]
'''


@pytest.mark.parametrize("helpers", [TYPE_NAME, IS_TENSOR, NOT_NDARRAY], ids=["type(x).__name__", "torch.is_tensor", "not isinstance ndarray"])
def test_a_value_read_past_its_conversion_is_on_the_host(helpers):
    body = "    for b in post([out]):\n        print(float(b))  # clean"
    assert _findings(helpers, body) == []


NOT_CONVERTED = '''
def post(output):
    boxes = output[0]
    if isinstance(boxes, list):
        boxes = boxes[0]
    return [boxes[i, 0] for i in range(boxes.shape[0])]
'''

CONVERTED_IN_ELSE = '''
def post(output):
    boxes = output[0]
    if torch.is_tensor(boxes):
        print("a tensor")
    else:
        boxes = np.asarray(boxes)
    return [boxes[i, 0] for i in range(boxes.shape[0])]
'''


@pytest.mark.parametrize("helpers", [NOT_CONVERTED, CONVERTED_IN_ELSE], ids=["another type test", "tensor branch keeps it"])
def test_a_value_that_may_still_be_a_tensor_is_read(helpers):
    body = "    for b in post([out]):\n        print(float(b))  # flag: TSL101"
    flagged, found = _marked(helpers, body)
    assert found == flagged


# -- memo misses ---------------------------------------------------------------------------------
ITEM_MEMO = '''
class Anchors(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.last_anchors = {}
        self.last_shape = None

    def forward(self, image):
        shape = image.shape[2:]
        if shape == self.last_shape and image.device in self.last_anchors:
            return self.last_anchors[image.device]
        self.last_shape = shape
        boxes = torch.from_numpy(np.zeros((10, 4))).to(image.device)  # clean
        self.last_anchors[image.device] = boxes
        return boxes
'''

WHOLE_MEMO = '''
class Anchors(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._mask = None

    def forward(self, image):
        if self._mask is not None:
            return self._mask
        self._mask = torch.ones(4).cuda()  # clean
        return self._mask
'''

TRUTHY_MEMO = '''
class Anchors(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cached = None

    def forward(self, image):
        if self.cached:
            return self.cached
        grid = torch.arange(16).cuda()  # clean
        self.cached = grid
        return grid
'''


@pytest.mark.parametrize("helpers", [ITEM_MEMO, WHOLE_MEMO, TRUTHY_MEMO], ids=["key in cache", "is not None", "truthy"])
def test_what_follows_a_memo_hit_runs_once_per_key(helpers):
    assert _findings(helpers + "\n\nanchors = Anchors()\n", "    a = anchors(x)") == []


NO_STORE = '''
class Anchors(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.last = {}

    def forward(self, image):
        if image.device in self.last:
            return self.last[image.device]
        return torch.ones(4).cuda()  # flag: TSL305
'''

OTHER_KEY = '''
class Anchors(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = {}
        self.boxes = {}

    def forward(self, image):
        if image.device in self.seen:
            return self.boxes[image.device]
        boxes = torch.ones(4).cuda()  # flag: TSL305
        self.boxes[image.device] = boxes
        return boxes
'''


@pytest.mark.parametrize("helpers", [NO_STORE, OTHER_KEY], ids=["nothing stores the memo", "tests one cache, returns another"])
def test_a_miss_that_fills_no_memo_runs_every_step(helpers):
    flagged, found = _marked(helpers + "\n\nanchors = Anchors()\n", "    a = anchors(x)")
    assert found == flagged


# -- built on the host, cast, copied ----------------------------------------------------------------
@pytest.mark.parametrize(
    "line",
    [
        "zero = torch.tensor(0).to(dtype).cuda()  # flag: TSL305",
        "zero = torch.tensor(0).type(torch.float16).cuda()  # flag: TSL305",
        "zero = torch.tensor(0).to(x.dtype).to('cuda')  # flag: TSL305",
    ],
    ids=["to(dtype)", "type(torch.float16)", "to(x.dtype)"],
)
def test_a_host_tensor_cast_then_copied_is_built_on_the_host(line):
    flagged, found = _marked("", f"    dtype = x.dtype\n    {line}")
    assert found == flagged


def test_a_size_extended_by_a_tuple_allocates_on_the_host():
    helpers = '''
def to_one_hot(tensor, n):
    one_hot = torch.FloatTensor(tensor.size() + (n,)).zero_()
    if tensor.is_cuda:
        one_hot = one_hot.cuda()  # flag: TSL305
    return one_hot
'''
    flagged, found = _marked(helpers, "    oh = to_one_hot(x.long(), 4)")
    assert found == flagged


def test_a_host_array_handed_in_and_copied_is_a_blocking_copy():
    """Near-miss: data the step is handed (an array, not built here) is a batch copy, TSL301."""
    helpers = "\n\ndef load(i):\n    return np.zeros((8, 4), dtype=np.float32) + i\n"
    flagged, found = _marked(helpers, "    arr = load(step)\n    t = torch.from_numpy(arr).to(x.dtype).cuda()  # flag: TSL301")
    assert found == flagged
