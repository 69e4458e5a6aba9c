"""TSL3xx, continued: float normalisation on the host (TSL304) and host tensors built and copied
every step (TSL305). The loader rules and blocking copies are in ``input_pipeline.py``; where
TSL304 looks for host float conversions is in ``_host_float_sources.py``."""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis import Kind
from torchsync_lint.analysis.kinds import DEVICE_VALUES
from torchsync_lint.analysis.images import divided_operand, is_divide_by_255
from torchsync_lint.analysis.loaders import literal_value, loaders
from torchsync_lint.knowledge.torch import COPY_METHODS
from torchsync_lint.knowledge.transforms import CONVERTERS
from torchsync_lint.rule import Rule
from torchsync_lint.rules._fix_guards import integer_arange, movable_factory, plain_device
from torchsync_lint.rules._host_float_sources import _NESTED_FUNCTIONS, HostFloatSources
from torchsync_lint.rules._pipeline_cases import COPY_LINE, GETITEM_LINE, TRANSFORM_LINE, dataset_script, pipeline, torchvision_script
from torchsync_lint.rules._host_built import CPU_FACTORIES, FRESH_HOST_TENSOR, LEGACY_CONSTRUCTORS, host_built, is_batch_item, stays_in_place
from torchsync_lint.rules.input_pipeline import _append_keyword, _render
from torchsync_lint.types import Applicability, Invalid, Valid


_RANDOM = frozenset({"rand", "randn", "randint", "randperm", "normal"})
_FULL_KEYWORDS = frozenset({"dtype", "device", "requires_grad", "pin_memory"})  # what `torch.full` takes too
_TF = "import torchvision.transforms.functional as TF\n"
_PICK = "from torch.utils.data import DataLoader\n\n\ndef pick(values, device='cpu'):\n    return torch.tensor(values, device=device)\n"


class HostFloatNormalization(HostFloatSources, Rule):
    """
    ## What it does
    Flags images converted to float and normalised on the host for a loader that feeds an
    accelerator, instead of after the uint8 copy to the device.

    The conversions: torchvision `ToTensor()`, `ConvertImageDtype(torch.float)`,
    `v2.ToDtype(torch.float32, scale=True)` (or `Normalize` when it is the only float step) in
    the dataset's transform pipeline; `x.float() / 255`-style normalisation in the
    `__getitem__` of a dataset class whose instance the loader reads (and in the functions of
    the module it calls); and `(x.float() / 255).to(device)` on a batch in a per-step loop.

    Across the project's modules: a transform handed to another module's function that builds
    the dataset and the loader (`get_loaders(train_transform=T)`), a pipeline another
    module's helper returns (`build_transforms(cfg)`), a module-level pipeline or dataset
    imported from another module (`transform=TRAIN_TRANSFORMS`), a dataset class whose
    instances another module's loader reads (with what its project base classes store on
    `self`), and the project functions its `__getitem__` calls. A pipeline set on the dataset
    after it is built (`ds.transform = Compose([...])`) is the dataset's too, and a loader of
    `train_set if is_train else test_set` reads both. `Normalize` alone is not reported when the dataset class makes the floats itself
    (that line is), nor is a conversion that a later `to_pil_image` undoes, one written into
    a slice of a tensor that exists already (`targets[:, 1:] = ToTensor()(boxes)`: that
    tensor's dtype is what is copied), nor a constant divided by 255.

    ## Why is this bad?
    A float32 image is 4x the bytes of the uint8 image it came from: four times the
    collation work, four times the pinned memory and four times the host-to-device
    bandwidth, and the normalisation arithmetic runs on a few CPU cores instead of the GPU.
    Sending uint8 and normalising on the device was one step of the 8x profile-driven pass
    on a CIFAR-like ResNet-18.

    ## Example
    ```python
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    train_set = torchvision.datasets.CIFAR10(root, transform=transform)
    loader = DataLoader(train_set, batch_size=128, num_workers=8, pin_memory=True)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
    ```

    ## Use instead
    ```python
    transform = transforms.PILToTensor()  # uint8, CHW
    train_set = torchvision.datasets.CIFAR10(root, transform=transform)
    loader = DataLoader(train_set, batch_size=128, num_workers=8, pin_memory=True)
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1) * 255
    for x, y in loader:
        x = (x.to(device, non_blocking=True).float() - mean) / std
    ```

    ## Fix safety
    Only a suggestion, as text (`torchsync-lint check --show-suggestions`), never an edit:
    neither `--fix` nor `--diff` applies it. The change has two halves that must land
    together: on the host the dataset returns uint8 (`PILToTensor()` for `ToTensor()`, no
    float `ToDtype`/`ConvertImageDtype`, no `Normalize`, no `.float() / 255` in
    `__getitem__`), and on the device every consumer of the dataset converts after the copy
    (`x.to(device, non_blocking=True).float().div_(255)`, then `(x - mean) / std` with the
    mean and std built once on the device). The rule sees the host half, but not reliably
    every place the batches are used (the training loop may be in another module; evaluation
    and visualisation read the same dataset), and a host-only rewrite breaks the pipeline:
    `Normalize` on uint8 raises `Input tensor should be a float tensor`, and without it the
    model gets values 255x too large. So the suggestion names both halves, with the
    `Normalize` arguments it found, for you to apply.
    """

    code = "TSL304"
    name = "host-float-normalization"
    message = "`{expr}` turns images into float32 on the host before the copy: 4x the bytes of a uint8 transfer; send uint8 and normalise on the device after `.to(device, non_blocking=True)`"
    fix_title = "Keep uint8 on the host; normalise on the device after the copy"
    runtime_observable = True  # verifier: a float tensor made from uint8 on the host, copied H2D

    VALID = [
        Valid(torchvision_script(first="transforms.PILToTensor()", copy="x = x.to(device, non_blocking=True).float().div_(255)").replace(
            "    transforms.Normalize((0.49, 0.48, 0.45), (0.25, 0.24, 0.26)),\n", "")),
        Valid(torchvision_script(device='torch.device("cpu")')),  # a CPU-only script
        Valid(dataset_script("return self.images[i]")),  # uint8 out, normalised on device
        Valid(dataset_script("return self.images[i] // 2")),  # integer arithmetic, stays uint8
        Valid(dataset_script("return self.images[i].float() / 255", device_line='device = torch.device("cpu")')),
        Valid(dataset_script("return self.images[i]", copy="x = x.to(device, non_blocking=True).float() / 255")),  # on device
        Valid(dataset_script("hue_delta = 18 / 255.0\n        return self.images[i]")),  # a constant scaled, not an image
        # tensor -> PIL -> uint8 tensor: the float made first is not what the dataset returns
        Valid(_TF + dataset_script("x = TF.to_pil_image(TF.to_tensor(self.images[i]))\n        return TF.pil_to_tensor(x)")),
        # Transforms for a dataset no GPU loader reads (a preview grid).
        Valid("import torch\nfrom torchvision import transforms, datasets\nmodel = torch.nn.Linear(2, 2).cuda()\n"
              "preview = datasets.CIFAR10('data', transform=transforms.ToTensor())\nimg, _ = preview[0]\n"),
    ]
    INVALID = [
        Invalid(torchvision_script(), line=TRANSFORM_LINE, message_contains="4x the bytes", applicability=Applicability.SUGGESTION),
        Invalid(torchvision_script(first="v2.ToImage(),\n    v2.ToDtype(torch.float32, scale=True)"), line=TRANSFORM_LINE + 1),
        Invalid(torchvision_script(first="transforms.ConvertImageDtype(torch.float)"), line=TRANSFORM_LINE),
        Invalid(dataset_script("return self.images[i].float() / 255"), line=GETITEM_LINE, applicability=Applicability.SUGGESTION),
        Invalid(dataset_script("x = self.images[i]\n        return x.float().div(255)"), line=GETITEM_LINE + 1),
        Invalid(dataset_script("return self.images[i]", copy="x = (x.float() / 255).to(device, non_blocking=True)"), line=21),
        Invalid(_TF + dataset_script("x = TF.to_pil_image(self.images[i])\n        return TF.to_tensor(x)"), line=GETITEM_LINE + 2),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        tracker = loaders(self.analysis)  # each loader says whether it feeds the device (here or elsewhere)
        found: dict[cst.CSTNode, list[cst.Call]] = {}  # finding node -> the Normalize calls beside it
        self._class_calls: dict[cst.CSTNode, list[cst.CSTNode]] = {}  # per class / __getitem__
        done: set[int] = set()
        for info in tracker.loaders:
            if not tracker.feeds_accelerator(info):
                continue
            for call in tracker.dataset_calls(info):
                if id(call) in done:
                    continue
                done.add(id(call))
                self._transforms(call, found)
        if tracker.module_feeds_accelerator:
            for dataset in tracker.handed_datasets():  # a trainer framework builds the loaders
                for call in tracker.dataset_calls_of(dataset):
                    if id(call) not in done:
                        done.add(id(call))
                        self._transforms(call, found)
        self._fed_from_elsewhere(found, done)
        for n, normalize in found.items():
            self.report(n, fix=self._suggestion(n, normalize), expr=self.snippet(n))

    def visit_Call(self, node: cst.Call) -> None:
        """`(x.float() / 255).to(device)` on a batch in a per-step loop."""
        tracker = loaders(self.analysis)
        if not tracker.is_h2d_call(node):
            return
        receiver = node.func.value  # type: ignore[union-attr]
        candidates = [receiver]
        if isinstance(receiver, cst.Name):
            candidates = [d.value for d in self.analysis.values.reaching_defs(receiver) if d.how == "assign" and d.value is not None]
        for expr in candidates:
            division = next((n for n in self.analysis.tree.walk_subtree(expr, _NESTED_FUNCTIONS) if is_divide_by_255(n) and tracker.batch_kind(n) is Kind.HOST_TENSOR), None)
            if division is not None:
                hot = self.hot(division)
                if hot is not None:
                    self.report(division, hot=hot, expr=self.snippet(division))
                return

    def _suggestion(self, node: cst.CSTNode, normalize: list[cst.Call]):
        """Both halves of the change as text (see "Fix safety": an edit of the host half alone
        would break the pipeline)."""
        expr = f"`{self.snippet(node, 60)}`"
        if isinstance(node, cst.Call) and self.analysis.qualname(node.func) in CONVERTERS:
            qn = self.analysis.qualname(node.func) or ""
            new = "pil_to_tensor" if qn.endswith("to_tensor") else "PILToTensor"
            prefix = self.code_for(node.func).rsplit(".", 1)[0] + "." if isinstance(node.func, cst.Attribute) else ""
            host = f"on the host, replace {expr} with `{prefix}{new}(...)`" if new == "pil_to_tensor" else f"on the host, replace {expr} with `{prefix}{new}()` (uint8)"
        elif is_divide_by_255(node):
            host = f"on the host, return the uint8 `{self.snippet(_uint8_operand(node), 40)}` instead of {expr} (and the arithmetic on it)"
        else:
            host = f"on the host, remove {expr}"
        others = [c for c in normalize if c is not node]
        if others:
            host += " and remove " + ", ".join(f"`{self.snippet(c, 60)}`" for c in others) + " (it needs float input)"
        mean, std = self._mean_std(normalize)
        device = "on the device, after the copy in every loop that reads this dataset (training, evaluation): `x = x.to(device, non_blocking=True).float().div_(255)`"
        if normalize:
            device += f", then `x = (x - mean) / std` with `mean = torch.tensor({mean}, device=device).view(1, -1, 1, 1)` and `std = torch.tensor({std}, device=device).view(1, -1, 1, 1)` built once before the loop"
        elif is_divide_by_255(node):
            device += ", then the rest of what `__getitem__` computed"
        return self.make_fix(applicability=Applicability.SUGGESTION, title=f"Keep uint8 on the host, normalise on the device: {host}; {device}.")

    def _mean_std(self, normalize: list[cst.Call]) -> tuple[str, str]:
        """The mean and std arguments of the first `Normalize(mean, std)`, as source."""
        for call in normalize:
            by_key = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
            positional = [a.value for a in call.args if a.keyword is None and not a.star]
            if (self.analysis.qualname(call.func) or "").endswith("functional.normalize"):
                positional = positional[1:]  # the image comes first
            mean = by_key.get("mean", positional[0] if positional else None)
            std = by_key.get("std", positional[1] if len(positional) > 1 else None)
            if mean is not None and std is not None:
                return self.snippet(mean, 80), self.snippet(std, 80)
        return "MEAN", "STD"


def _uint8_operand(node: cst.CSTNode) -> cst.CSTNode:
    operand = divided_operand(node)
    if isinstance(operand, cst.Call) and isinstance(operand.func, cst.Attribute) and operand.func.attr.value in ("float", "double") and not operand.args:
        return operand.func.value
    return operand



# -- TSL305 --------------------------------------------------------------------------------------
class HostTensorInLoop(Rule):
    """
    ## What it does
    Flags a tensor built from host data, or filled on the CPU, and then copied to the device
    inside a loop that runs every training step.

    The patterns:

    - `torch.tensor(...)`, `torch.as_tensor(...)` and `torch.asarray(...)` of host data
      (Python numbers, lists, NumPy arrays) with an accelerator `device=` argument, or
      followed by `.to(device)`/`.cuda()`;
    - a tensor filled on the CPU and then copied: `torch.zeros(n).to(device)`,
      `torch.randn(b, z).cuda()` (TorchTidy's "Extra CUDA Copy" pattern), also through
      reshapes and dtype casts (`torch.tensor(0).to(dtype).cuda()`) and names;
    - a legacy CUDA constructor of host data: `torch.cuda.FloatTensor(np.ones(n))`, or
      through a name bound to one (`Tensor = torch.cuda.FloatTensor if cuda else
      torch.FloatTensor`; `Tensor(b, n)`, a size, allocates on the device and is not flagged).

    `torch.full((), v, device=d)`, `torch.zeros(..., device=d)` and other factories that
    fill memory on the device are not flagged, nor is `as_tensor` of a device tensor.

    ## Why is this bad?
    These calls build the tensor in (pageable) CPU memory and then copy it to the device
    with a blocking copy: the host waits for the GPU queue to drain, every step
    (pytorch/pytorch#120996). Constants such as normalisation means, class weights or a
    scalar `1.0` can be built once before the loop; a scalar can be filled directly on the
    device with `torch.full`, and `zeros`/`ones`/`randn`/... take `device=` themselves: a
    fill kernel, no copy, no sync.

    ## Example
    ```python
    for x, y in loader:
        mean = torch.tensor([0.49, 0.48, 0.45], device=device).view(1, 3, 1, 1)
        scale = torch.tensor(0.5, device=device)
        noise = torch.randn(x.shape[0], 128).to(device)
        x = (x.to(device, non_blocking=True).float() / 255 - mean) * scale
    ```

    ## Use instead
    ```python
    mean = torch.tensor([0.49, 0.48, 0.45], device=device).view(1, 3, 1, 1)  # once
    for x, y in loader:
        scale = torch.full((), 0.5, device=device)  # or hoist it too
        noise = torch.randn(x.shape[0], 128, device=device)
        x = (x.to(device, non_blocking=True).float() / 255 - mean) * scale
    ```

    ## Fix safety
    - A literal scalar with a `device=` argument (`torch.tensor(0.5, device=d)`) becomes
      `torch.full((), 0.5, device=d)`: the same value, dtype (inferred from the literal exactly
      as `torch.tensor` does), device and `requires_grad`, without the host round trip. Safe.
      Not offered for the legacy constructors (`torch.Tensor(3)` is three uninitialised
      numbers, not 3) or with arguments `torch.full` does not take (`copy=`).
    - `torch.zeros/ones/empty/full/eye(...).to(d)`, and `torch.arange(n)` or an `arange` of
      integer literals, become `torch.zeros(..., device=d)`: the same values on the same
      device. Safe. A fractional `arange` and `linspace` are unsafe: the device kernel computes
      them in other precision than the CPU's (a float32 `arange` accumulates in double on the
      CPU, in float32 on CUDA), so the last bit of some values may differ.
    - `torch.rand/randn/randint/randperm/normal(...).to(d)` becomes `torch.randn(..., device=d)`:
      unsafe, because the numbers now come from the device's generator, so a seeded run
      draws different values.
    - The move into `device=` is only offered when the `.to()` argument is certainly a
      device (a device string or index, `torch.device(...)`, `x.device`, or a name bound only
      to those; a parameter when every call site in the module passes one): `.to(other)` of a
      tensor also converts the dtype, and `device=` does not take a tensor. It is withheld
      when the factory draws from an explicit `generator` (a CPU generator cannot fill device
      memory), passes `out=`, `layout=`, `requires_grad=True` (the device tensor would become
      the leaf) or `pin_memory=True` (pinning a device tensor raises), or `**kwargs`.
    - Anything else (a list, a NumPy array) needs the tensor hoisted out of the loop by hand.
    """

    code = "TSL305"
    name = "host-tensor-in-loop"
    message = "`{expr}` builds a tensor on the host and copies it to the device with a blocking copy every step; {advice}"
    fix_title = "Create the tensor on the device"
    runtime_observable = True  # verifier: `torch.tensor(host data, device=cuda)` / a blocking H2D copy

    _HOIST = "create it once before the loop, or fill a scalar on the device with `torch.full((), v, device=...)`"

    VALID = [
        Valid(pipeline(copy="scale = torch.full((), 0.5, device=device)\n    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),
        Valid(pipeline(copy="bias = torch.zeros(4, device=device)\n    noise = torch.randn(8, 4, device=device)")),
        Valid(pipeline(copy="ids = torch.tensor([1, 2, 3])\n    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)")),  # no device
        Valid(pipeline(copy="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n    z = torch.as_tensor(x, device=device)")),  # already there
        Valid(pipeline(copy="cpu_scale = torch.tensor(0.5, device='cpu')\n    cpu_noise = torch.randn(3).to('cpu')")),
        Valid(pipeline(loader="DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)\nweights = torch.tensor([1.0, 2.0, 1.0, 1.0], device=device)")),  # hoisted
        Valid(pipeline(copy="half = torch.zeros(4).to(torch.float16)")),  # a dtype cast, stays on the CPU
        Valid(pipeline(copy="bias = torch.zeros(4, device=device)\n    bias = bias.cuda()")),  # made on the device: the copy is a no-op
        Valid(pipeline(copy="if 'w' not in cache:\n        cache['w'] = torch.tensor([1.0, 2.0]).to(device)")),  # a memo filled once per key
        Valid(pipeline(copy="noise = torch.randn(4) if x is None else x\n    noise = noise.cuda()")),  # not only a fresh fill on every path
        # a helper whose device defaults to the CPU, and no call site passes another
        Valid(pipeline(copy="c = pick([0, 3])\n    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)", imports=_PICK)),
        # `type_as(t)` goes where `t` is: of a host tensor it stays on the host, of one we cannot place it says nothing
        Valid(pipeline(copy="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n    mask = torch.ones(8).type_as(torch.zeros(8))")),
        Valid(pipeline(copy="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n    mask = torch.ones(8).type_as(reference)")),
        Valid(pipeline(copy="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n    mask = torch.ones(8, device=device).type_as(x)")),  # filled on the device already
    ]
    INVALID = [
        # `.type_as(device_tensor)` is a copy to where that tensor is, in three spellings
        Invalid(pipeline(copy="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n    mask = torch.ones(x.shape[0]).type_as(x)"), line=COPY_LINE + 1, expected_fix=None),
        Invalid(pipeline(copy="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n    targets = torch.Tensor(np.zeros(4)).type_as(x).long()", imports="import numpy as np\nfrom torch.utils.data import DataLoader"), line=COPY_LINE + 2, expected_fix=None),
        Invalid(pipeline(copy="x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)\n    noise = torch.randn(8, 4)\n    noise = noise.type_as(x)"), line=COPY_LINE + 2),
        Invalid(
            pipeline(copy="scale = torch.tensor(0.5, device=device)"),
            line=COPY_LINE,
            expected_fix=pipeline(copy="scale = torch.full((), 0.5, device=device)"),
            applicability=Applicability.SAFE,
        ),
        Invalid(pipeline(copy="w = torch.as_tensor([1.0, 2.0, 1.0, 1.0], device=device)"), line=COPY_LINE, message_contains="once before the loop"),
        Invalid(pipeline(copy="lengths = [len(s) for s in y]\n    lens = torch.tensor(lengths).to(device)"), line=COPY_LINE + 1),
        Invalid(pipeline(copy="t = torch.tensor(np.arange(4)).cuda()", imports="import numpy as np\nfrom torch.utils.data import DataLoader"), line=COPY_LINE + 1),
        Invalid(pipeline(copy="ranks = torch.LongTensor(range(8)).unsqueeze(0).expand(4, 8).to(device)"), line=COPY_LINE),  # reshaped on the host, then copied
        Invalid(pipeline(copy="noise = torch.randn(32, 4)\n    noise = noise.cuda()"), line=COPY_LINE + 1, message_contains="torch.randn(..., device=...)"),  # named, then copied
        Invalid(pipeline(copy="if 'w' not in seen:\n        w = torch.tensor([1.0, 2.0]).to(device)"), line=COPY_LINE + 1),  # a test, but no memo filled
        Invalid(pipeline(copy="hot = torch.zeros(32, 10).scatter_(1, y.view(-1, 1), 1)\n    hot = hot.to(device)"), line=COPY_LINE + 1),  # filled in place, then copied
        Invalid(pipeline(copy="flag = torch.tensor(True, device='cuda')"), line=COPY_LINE, expected_fix=pipeline(copy="flag = torch.full((), True, device='cuda')")),
        Invalid(pipeline(copy="obs, rewards, dones, infos = env.step(action)\n    done = torch.Tensor(dones).to(device)"), line=COPY_LINE + 1),  # cleanrl
        Invalid(
            pipeline(copy="mask = torch.ones(32, 4).to(device)"),
            line=COPY_LINE,
            message_contains="torch.ones(..., device=...)",
            expected_fix=pipeline(copy="mask = torch.ones(32, 4, device=device)"),
            applicability=Applicability.SAFE,
        ),
        Invalid(pipeline(copy="c = pick([0, 3], device)\n    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)", imports=_PICK), line=7),
        Invalid(
            pipeline(copy="noise = torch.randn(32, 4).cuda()"),
            line=COPY_LINE,
            expected_fix=pipeline(copy='noise = torch.randn(32, 4, device="cuda")'),
            applicability=Applicability.UNSAFE,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        qn = self.analysis.qualname(node.func) or ""
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in COPY_METHODS and not qn:
            self._named_fill_copied(node)
        if qn in FRESH_HOST_TENSOR:
            self._from_host_data(node, qn)
        elif qn.startswith("torch.") and qn.count(".") == 1 and qn[6:] in CPU_FACTORIES:
            self._filled_then_copied(node, qn[6:])
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in ("new", "new_tensor") and not qn:
            self._new_from_host_data(node)
        elif (qn.startswith("torch.cuda.") or isinstance(node.func, cst.Name)) and self.analysis.values.names_cuda_tensor_type(node.func):
            self._cuda_constructor_of_host_data(node)

    def _cuda_constructor_of_host_data(self, node: cst.Call) -> None:
        """`torch.cuda.FloatTensor(np.ones(n))`, `Tensor(np.zeros(...))` with `Tensor =
        torch.cuda.FloatTensor if cuda else torch.FloatTensor`: host data read into a CUDA
        tensor, a blocking copy. Given a size (`torch.cuda.FloatTensor(b, n)`) it allocates on
        the device: no copy."""
        positional = [a for a in node.args if a.keyword is None]
        if len(positional) != 1 or positional[0].star or not _host_data(self.analysis, positional[0].value):
            return
        hot = self.hot(node)
        if hot is not None:
            self.report(node, hot=hot, expr=self.snippet(node), advice=self._HOIST)

    def _new_from_host_data(self, node: cst.Call) -> None:
        """`loss.new([...])` / `t.new_tensor(data)`: host data copied to `t`'s device."""
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if not positional or self.analysis.kind(node.func.value) not in (Kind.DEVICE, Kind.MOVED):  # type: ignore[union-attr]
            return
        data = positional[0].value
        if node.func.attr.value == "new" and not isinstance(data, (cst.List, cst.Tuple, cst.ListComp)):  # type: ignore[union-attr]
            return  # `t.new(n)`, `t.new(x.shape)`: an uninitialised tensor of that size, no data copied
        if self.analysis.kind(data) in DEVICE_VALUES:
            return
        hot = self.hot(node)
        if hot is not None:
            self.report(node, hot=hot, expr=self.snippet(node), advice=self._HOIST)

    def visit_Assign(self, node: cst.Assign) -> None:
        """`gain[2:6] = torch.tensor(...)`: a CPU tensor stored into a device tensor is a
        blocking host-to-device copy."""
        for target in node.targets:
            store = target.target
            if (
                isinstance(store, cst.Subscript)
                and self.analysis.kind(store.value) is Kind.DEVICE
                and self.analysis.kind(node.value) is Kind.HOST_TENSOR
                and not self.analysis.values.is_python_container(store.value)  # `batch[k] = t.cpu()`: a dict entry
            ):
                if not loaders(self.analysis).module_feeds_accelerator:
                    return
                hot = self.hot(node)
                if hot is not None:
                    self.report(node, hot=hot, expr=self.snippet(node), advice=self._HOIST)
                return

    def _from_host_data(self, node: cst.Call, qn: str) -> None:
        positional = [a for a in node.args if a.keyword is None]
        if not positional or positional[0].star:
            return
        data = positional[0].value
        if not loaders(self.analysis).module_feeds_accelerator:
            return  # `Trainer(accelerator="cpu")`: nothing reaches a GPU
        device = self._keyword(node, "device")
        copy = self._chained_copy(node, through_reshapes=True)  # also `torch.tensor(ids).unsqueeze(0).to(device)`
        if device is not None:
            if self.analysis.values.device_of(device.value) != "accelerator":
                return  # built on the CPU, or a device we cannot place
        elif copy is None:
            return  # a CPU tensor: no copy here
        if is_batch_item(self.analysis, data):
            return  # `torch.LongTensor(labels).to(device)` of the loader's batch: its copy is TSL301's (_host_built)
        kind = self.analysis.kind(data)
        if kind is Kind.DEVICE:
            return  # already on the device: no host round trip (a list of device tensors is read into a host tensor)
        if qn != "torch.tensor" and qn not in LEGACY_CONSTRUCTORS and kind not in (Kind.HOST, Kind.HOST_TENSOR):
            return  # `as_tensor(x)` of something we cannot place may be a no-op
        hot = self.hot(node)
        if hot is None:
            return
        fix = None
        ok, value = literal_value(data)
        if (
            device is not None
            and ok
            and isinstance(value, (int, float, bool))
            and isinstance(node.func, cst.Attribute)
            and qn not in LEGACY_CONSTRUCTORS  # `torch.Tensor(3)` is three uninitialised numbers, not 3
            and all(a.keyword is None or a.keyword.value in _FULL_KEYWORDS for a in node.args)
            and len(positional) == 1
        ):
            new = node.with_changes(
                func=node.func.with_changes(attr=cst.Name("full")),
                args=[cst.Arg(cst.Tuple([]), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), *node.args],
            )
            fix = self.make_fix(self.edit(node, _render(self, new)))
        self.report(node, fix=fix, hot=hot, expr=self.snippet(node), advice=self._HOIST)

    def _filled_then_copied(self, node: cst.Call, factory: str) -> None:
        """`torch.zeros(n).to(device)`: filled on the CPU, then a blocking copy (also after
        reshaping it there: `torch.arange(n).unsqueeze(1).to(device)`)."""
        copy = self._chained_copy(node, through_reshapes=True)
        if copy is None or self._keyword(node, "device") is not None:
            return  # no copy, or the factory already names a device
        direct = self._chained_copy(node) is copy
        if not loaders(self.analysis).module_feeds_accelerator:
            return
        hot = self.hot(copy)
        if hot is None:
            return
        advice = f"create it on the device: `torch.{factory}(..., device=...)` fills it there with no copy"
        fix = self._device_fix(node, copy, factory) if direct else None  # the rewrite knows direct chains only
        self.report(copy, fix=fix, hot=hot, expr=self.snippet(copy), advice=advice)

    def _named_fill_copied(self, copy: cst.Call) -> None:
        """`noise = torch.randn(n)` ... `noise = noise.cuda()`, `(torch.ones(s) * -1).cuda()`,
        `anchors = torch.from_numpy(a)` ... `anchors.cuda()`: a name or an expression holding
        a tensor built on the CPU in the step, copied (the chained forms `torch.randn(n).cuda()`
        and `torch.tensor(v).cuda()` are found from the factory)."""
        receiver = copy.func.value  # type: ignore[union-attr]
        while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and stays_in_place(self.analysis, receiver):
            receiver = receiver.func.value
        if isinstance(receiver, cst.Call) and self._found_at_factory(receiver):
            return
        factory = host_built(self.analysis, receiver)
        if factory is None or not self._moves_to_accelerator(copy) or not loaders(self.analysis).module_feeds_accelerator:
            return
        hot = self.hot(copy)
        if hot is not None:
            if factory in CPU_FACTORIES:
                advice = f"create it on the device: `torch.{factory}(..., device=...)` fills it there with no copy"
            elif factory == "cpu":
                advice = "keep it on the device: it was copied to the host in the step, and this copies it back"
            else:
                advice = self._HOIST
            self.report(copy, hot=hot, expr=self.snippet(copy), advice=advice)

    def _found_at_factory(self, receiver: cst.Call) -> bool:
        """`torch.tensor(v).cuda()`, `torch.randn(n).cuda()`: reported from the factory itself."""
        qn = self.analysis.qualname(receiver.func) or ""
        return qn in FRESH_HOST_TENSOR or (qn.startswith("torch.") and qn.count(".") == 1 and qn[6:] in CPU_FACTORIES)

    def _moves_to_accelerator(self, copy: cst.Call) -> bool:
        """Does ``copy`` (a `.cuda()`, `.to(...)`, `.type(...)` or `.type_as(t)` call) move to an accelerator?"""
        return self.analysis.values.copy_destination(copy) == "accelerator"

    def _device_fix(self, factory_call: cst.Call, copy: cst.Call, factory: str):
        method = copy.func.attr.value  # type: ignore[union-attr]
        if method not in ("to", "cuda"):
            return None  # `.type(...)`, `.type_as(t)`: a dtype too; the user picks the factory's
        if method == "cuda":
            if copy.args:
                return None  # `.cuda(i)` / `.cuda(non_blocking=...)`: leave it to the user
            device = '"cuda"'
        else:
            if len(copy.args) != 1 or copy.args[0].star:
                return None  # a dtype or `non_blocking` as well: not a plain move
            arg = copy.args[0]
            if arg.keyword is not None and arg.keyword.value != "device":
                return None
            if not plain_device(self.analysis, arg.value):
                return None  # `.to(other_tensor)` also converts the dtype, and `device=` takes no tensor
            device = _render(self, arg.value)
        if not movable_factory(self.analysis, factory_call, factory):
            return None
        # The factory call's own source text (not a re-render, which would lose the block's
        # indentation on continuation lines) with `device=` spliced in; it replaces the copy.
        rng = self.position(factory_call)
        lines = self.analysis.source.splitlines(keepends=True)[rng.start.line - 1 : rng.end.line]
        insertion = _append_keyword(self, factory_call, "device", device)
        i = insertion.line - rng.start.line
        lines[i] = lines[i][: insertion.column - 1] + insertion.content + lines[i][insertion.column - 1 :]
        shift = len(insertion.content) if insertion.line == rng.end.line else 0
        lines[-1] = lines[-1][: rng.end.column + shift]
        lines[0] = lines[0][rng.start.column :]  # after the end trim: absolute columns
        exact = factory not in _RANDOM and factory != "linspace" and (factory != "arange" or integer_arange(factory_call))
        return self.make_fix(self.edit(copy, "".join(lines)), applicability=Applicability.SAFE if exact else Applicability.UNSAFE)

    @staticmethod
    def _keyword(node: cst.Call, name: str) -> cst.Arg | None:
        return next((a for a in node.args if a.keyword is not None and a.keyword.value == name), None)

    def _chained_copy(self, node: cst.Call, through_reshapes: bool = False) -> cst.Call | None:
        """The `.to(<accelerator>)` / `.cuda()` call applied directly to ``node`` (or, with
        ``through_reshapes``, after reshaping methods that keep it on the host), if any."""
        parent = self.analysis.index.parent(node)
        while through_reshapes and isinstance(parent, cst.Attribute):
            call = self.analysis.index.parent(parent)
            if not isinstance(call, cst.Call) or call.func is not parent or not stays_in_place(self.analysis, call):
                break  # (a copy, or no call: judged below)
            node, parent = call, self.analysis.index.parent(call)
        if not isinstance(parent, cst.Attribute) or parent.attr.value not in COPY_METHODS:
            return None
        call = self.analysis.index.parent(parent)
        if not isinstance(call, cst.Call) or call.func is not parent:
            return None
        return call if self._moves_to_accelerator(call) else None


def _host_data(analysis, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Data, not a size: a list or tuple display, a NumPy call's array (`np.ones(...)`,
    `np.random.normal(...)`), or a name every definition of which binds one."""
    if isinstance(expr, (cst.List, cst.Tuple, cst.ListComp)):
        return True
    if isinstance(expr, cst.Call):
        return (analysis.qualname(expr.func) or "").startswith("numpy.")
    if isinstance(expr, cst.Name) and depth < 3:
        defs = analysis.values.reaching_defs(expr)
        return bool(defs) and all(d.how == "assign" and d.value is not None and _host_data(analysis, d.value, depth + 1) for d in defs)
    return False


__all__ = ["HostFloatNormalization", "HostTensorInLoop"]
