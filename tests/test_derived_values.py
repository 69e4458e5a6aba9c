"""Tensors computed from what callers pass (issue 21): a helper of another module that slices,
compares and combines its parameters with torch functions returns a tensor where its arguments
are, however deep the expression; a submodule's output inside a model's forward says nothing of
the model's place. Each case with a near-miss that must stay silent; projects are checked as a
tree and file by file (tests/test_objects.py's `project`)."""

from __future__ import annotations

import pytest

from tests.test_objects import project

GEOMETRY = """\
    import torch


    def overlap(a, b):
        lo = torch.max(a[:, :2].unsqueeze(1), b[:, :2].unsqueeze(0))
        hi = torch.min(a[:, 2:].unsqueeze(1), b[:, 2:].unsqueeze(0))
        inter = torch.clamp(hi - lo, min=0)
        area = inter[:, :, 0] * inter[:, :, 1]
        return area / (-(a[:, 2] - a[:, 0])).unsqueeze(1)
"""

TRAIN = """\
    import torch
    from geometry import overlap


    def train(model, loader, opt, priors):
        for boxes, labels in loader:
            boxes = boxes.cuda(non_blocking=True)
            labels = labels.cuda(non_blocking=True)
            best, idx = overlap({boxes}, priors).max(dim=0)
            kept = labels[best < 0.5]  # a mask read (a store of a scalar would be masked_fill_)
            loss = model(boxes, labels)
            loss.backward()
            opt.step()
"""


@pytest.mark.parametrize(("boxes", "flagged"), [("boxes", True), ("torch.zeros(4, 4)", False)])
def test_a_helper_computing_on_its_parameters_returns_where_the_call_passes(tmp_path, capsys, boxes, flagged):
    """`overlap(boxes, priors)` slices, clamps and divides its parameters through a chain deeper
    than the analysis follows definitions: the result is where `boxes` is. With device boxes its
    `.max()` makes a device mask (TSL105); with a CPU tensor the same code is silent."""
    found = project(tmp_path, {"geometry.py": GEOMETRY, "train.py": TRAIN.format(boxes=boxes)}, capsys)
    assert found == ({("train.py", 10, "TSL105"): 1} if flagged else {})


HEADS = """\
    from torch import nn


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 1)

        def forward(self, x):
            return self.conv(x)


    def build_head():
        return Head()
"""

NET = """\
    import torch.nn.functional as F
    from torch import nn
    from heads import build_head


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = build_head()

        def forward(self, x):
            return F.interpolate(self.head(x), size=x.size()[2:])
"""

SHOW = """\
    def show(writer, output, step):
        writer.add_image("pred", output[0].detach().cpu(), step)
"""

TRAINER = """\
    import torch
    from net import Net
    from show import show


    class Trainer:
        def __init__(self, writer, cuda, ids):
            self.model = Net()
            if cuda:
                self.model = torch.nn.DataParallel(self.model, device_ids=ids)
                self.model = self.model.{place}()
            self.writer = writer
            self.cuda = cuda

        def train(self, loader, opt):
            for i, sample in enumerate(loader):
                x, y = sample["image"], sample["label"]
                if self.cuda:
                    x, y = x.{move}, y.{move}
                output = self.model(x)
                loss = (output - y).pow(2).mean()
                loss.backward()
                opt.step()
                show(self.writer, output, i)
"""


@pytest.mark.parametrize(("place", "move", "flagged"), [("cuda", "cuda()", True), ("cpu", "float()", False)])
def test_a_submodules_output_in_a_forward_does_not_place_the_model(tmp_path, capsys, place, move, flagged):
    """Net.forward returns `F.interpolate(self.head(x))`: `self.head` is built in `__init__` (by
    another module's function) and never moved there, but it moves with the Net. The model stored on the Trainer is the CPU Net
    or, on one path, a moved one: its output is what train.py knew (a device tensor when the
    batch is copied to the GPU), not a host tensor. With model and batches kept on the CPU,
    show's `.cpu()` is no copy.
    """
    files = {"heads.py": HEADS, "net.py": NET, "show.py": SHOW, "train.py": TRAINER.format(place=place, move=move)}
    found = project(tmp_path, files, capsys)
    assert found == ({("show.py", 2, "TSL101"): 1} if flagged else {})


SAMPLER = """\
    import torch


    def sample(model, x, steps):
        for _ in range(steps):
            logits = model(x)
            x = torch.multinomial(torch.softmax(logits, -1), 1)
        return x
"""

EVALUATE = """\
    import torch
    from sampler import sample


    class Evaluator:
        def __init__(self, model, cuda):
            self.model = model
            if cuda:
                self.model = torch.nn.DataParallel(self.model).cuda()

        def rollout(self, env, episodes):
            for _ in range(episodes):
                state = env.reset()
                while True:
                    action = sample({handed}, state, 1)
                    state, reward, done = env.act(action.cpu().numpy())
                    if done:
                        break
"""


@pytest.mark.parametrize(("handed", "flagged"), [("self.model.module", True), ("None", False)])
def test_a_loop_handing_a_model_to_a_function_that_calls_it_runs_a_forward_per_iteration(tmp_path, capsys, handed, flagged):
    """`sample(self.model.module, state, 1)` runs the wrapped model (`.module` of a
    DataParallel is the model, placed with it) in sampler.py: the `while` loop is per step, and
    what `sample` returns is the model's device output (its parameter `x` is reassigned in its
    loop). Handing it no model, the loop is no step loop."""
    main = "import torch\nfrom evaluate import Evaluator\n\nEvaluator(torch.nn.Linear(4, 2), True).rollout(None, 10)\n"
    found = project(tmp_path, {"sampler.py": SAMPLER, "evaluate.py": EVALUATE.format(handed=handed), "main.py": main}, capsys)
    assert found == ({("evaluate.py", 16, "TSL101"): 1} if flagged else {})


EPOCH = """\
    def run_epoch(model, loader, opt):
        for x, y in loader:
            loss = model(x.cuda(non_blocking=True), y.cuda(non_blocking=True))
            loss.backward()
            opt.step()
"""

EPOCHS = """\
    import torch
    from epoch import run_epoch


    def fit(model, loader, opt, epochs):
        model = model.cuda()
        scale = torch.ones(1).cuda()
        for epoch in range(epochs):
            run_epoch(model, loader, opt)
            print(scale.item())
"""


def test_handing_a_model_to_a_function_that_runs_whole_passes_is_no_step(tmp_path, capsys):
    """`run_epoch(model, loader, opt)` calls the model it is handed, but in a pass over a loader:
    the epoch loop calling it is not per step (its `.item()` once per epoch is silent)."""
    assert project(tmp_path, {"epoch.py": EPOCH, "fit.py": EPOCHS}, capsys) == {}


DETECTOR = """\
    import torch
    from torch import nn


    class Detector(nn.Module):
        def forward(self, x):
            return x

        def detect(self, scores, threshold):
            keep = scores > threshold
            return keep.sum().item()
{other}
"""

OTHER = """\

    class Tracker(nn.Module):
        def detect(self, scores, threshold):
            return 0
"""

EVALUATE_CHECKPOINT = """\
    import torch
    from detector import Detector  # unpickling the checkpoint needs the class


    def evaluate(loader, model):
        for images in loader:
            scores = model(images.cuda(non_blocking=True))
            kept = model.detect(scores, 0.5)


    checkpoint = torch.load("checkpoint.pth")
    model = checkpoint["model"].cuda()
    evaluate(torch.utils.data.DataLoader(range(4), num_workers=2, pin_memory=True), model)
"""


@pytest.mark.parametrize(("other", "flagged"), [("", True), (OTHER, False)])
def test_a_method_of_an_unpickled_model_that_one_project_module_class_defines_runs_it(tmp_path, capsys, other, flagged):
    """`model = torch.load(...)["model"]` has no class the code names; `model.detect(scores,
    0.5)` can only run the project's Detector.detect, the one module class defining `detect`:
    it runs every batch with the model's device output (its `.item()` is TSL101). When two
    module classes define `detect`, the call says nothing of which runs: silent."""
    found = project(tmp_path, {"detector.py": DETECTOR.format(other=other), "evaluate.py": EVALUATE_CHECKPOINT}, capsys)
    assert found == ({("detector.py", 11, "TSL101"): 1} if flagged else {})


def test_a_helper_concatenating_its_parameters_returns_where_they_are(tmp_path, capsys):
    """`torch.cat([a[:, :2], a[:, 2:] * 2], 1)`: a list of tensors computed from the parameter."""
    helper = "import torch\n\n\ndef to_corners(a):\n    return torch.cat([a[:, :2] - a[:, 2:] / 2, a[:, :2] + a[:, 2:] / 2], 1)\n"
    train = TRAIN.replace("from geometry import overlap", "from boxes import to_corners").replace("overlap({boxes}, priors)", "to_corners({boxes})")
    assert project(tmp_path, {"boxes.py": helper, "train.py": train.format(boxes="boxes")}, capsys) == {("train.py", 10, "TSL105"): 1}


REGISTRY_PROJECT = {
    "registry.py": """\
        class Registry(dict):
            def register(self, name):
                def add(obj):
                    self[name] = obj
                    return obj
                return add


        HEADS = Registry()
        LOSSES = Registry()
    """,
    "heads.py": """\
        from torch import nn
        import registry


        @registry.{into}.register("box")
        class BoxHead(nn.Module):
            def forward(self, scores, labels):
                keep = labels > 0
                return scores[keep].sum()
    """,
    "detector.py": """\
        from torch import nn
        import registry


        class Detector(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.head = registry.HEADS[cfg.head](cfg)

            def forward(self, images, labels):
                return self.head(images, labels)


        ARCHS = {"detector": Detector}


        def build(cfg):
            arch = ARCHS[cfg.arch]
            return arch(cfg)
    """,
    "train.py": """\
        import torch
        from detector import build
        from engine import fit


        def main(cfg, loader):
            model = build(cfg)
            model.to(torch.device("cuda"))
            fit(model, loader, torch.optim.SGD(model.parameters(), lr=0.1))
    """,
    "engine.py": """\
        def fit(model, loader, opt):
            for images, labels in loader:
                loss = model(images.cuda(non_blocking=True), labels.cuda(non_blocking=True))
                loss.backward()
                opt.step()
    """,
}


@pytest.mark.parametrize(("into", "flagged"), [("HEADS", True), ("LOSSES", False)])
def test_a_module_picked_from_a_registry_by_the_config_runs_every_step(tmp_path, capsys, into, flagged):
    """The detector is picked from a dict by a local name (`arch = ARCHS[cfg.arch]`), moved by
    a `model.to(device)` statement and handed to engine.fit; its head is picked from a registry
    that BoxHead is registered into by a decorator: BoxHead.forward runs every step on device
    tensors (its mask indexing is TSL105). Registered into another registry, nothing says it
    runs."""
    files = dict(REGISTRY_PROJECT, **{"heads.py": REGISTRY_PROJECT["heads.py"].format(into=into)})
    found = project(tmp_path, files, capsys)
    assert found == ({("heads.py", 9, "TSL105"): 1} if flagged else {})


@pytest.mark.parametrize(
    ("backward", "read", "flagged"),
    [
        ("(v_loss * 0.5 + a_loss - ent * 0.01).backward()", "v_loss", True),
        ("(v_loss * 0.5 + a_loss - ent * 0.01).backward()", "ent", True),
        ("(a_loss / accum).backward()", "a_loss", True),
        ("(v_loss * ent).backward()", "ent", False),
        ("(a_loss / accum).backward()", "accum", False),
    ],
)
def test_the_terms_of_a_backpropagated_expression_are_in_the_graph(backward, read, flagged):
    """A PPO update backpropagates `v_loss * coef + a_loss - ent * beta`: each term scaled by
    a constant is in the model's graph (a device tensor: its `.item()` is TSL101). Of two
    names multiplied, or of a divisor, nothing says which is the tensor: silent."""
    from tests.test_objects import findings, in_loop

    source = in_loop(f"""\
        v_loss, a_loss, ent, accum = evaluate_actions()
        {backward}
        opt.step()
        total = {read}.item()
    """)
    source = "from agents import evaluate_actions\n" + source
    assert findings(source) == ([(10, "TSL101")] if flagged else [])


IGNITE = """\
    import torch
    from {module} import Engine


    def create_trainer(model, opt, loss_fn):
        def _update(engine, batch):
            x, y = batch
            x = x.to("cuda")
            loss = loss_fn(model(x), y.to("cuda", non_blocking=True))
            loss.backward()
            opt.step()
            return loss.item()
        return {wrap}
"""


@pytest.mark.parametrize(
    ("module", "wrap", "expected"),
    [
        ("ignite.engine", "Engine(_update)", [(8, "TSL301"), (12, "TSL101")]),
        ("ignite.engine", "_update", []),
        ("mylib.engine", "Engine(_update)", []),
    ],
)
def test_a_function_handed_to_ignites_engine_runs_every_batch(module, wrap, expected):
    """`Engine(_update)` runs `_update(engine, batch)` once per batch of `engine.run(loader)`,
    with the batch as the loader yields it (ignite moves nothing): its blocking copy and its
    `.item()` are per step. The same function returned as is, or handed to another library's
    `Engine`, says nothing of how often it runs."""
    from tests.test_objects import findings

    assert findings(IGNITE.format(module=module, wrap=wrap)) == expected


GENERATOR = """\
    import torch
    from torch import nn


    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x):
            noise = torch.randn(x.size(0), 4).to(device=x.device)
            return self.proj(x + noise)
"""

GAN_TRAIN = """\
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    from models import Generator


    def run(loader, opt, rank):
        net_g = Generator().cuda(rank)
        net_d = torch.nn.Linear(4, 1).cuda(rank)
        net_g = DDP(net_g, device_ids=[rank])
        fit([net_g, net_d], loader, opt, rank)


    def fit(nets, loader, opt, rank):
        net_g, net_d = nets
        for x in loader:
            x = x.cuda(rank, non_blocking=True)
            score = {scored}
            score.mean().backward()
            opt.step()
"""


@pytest.mark.parametrize(("scored", "flagged"), [("net_d(net_g(x))", True), ("net_d(x)", False)])
def test_a_wrapped_model_unpacked_from_a_list_runs_its_projects_forward(tmp_path, capsys, scored, flagged):
    """`net_g = DDP(Generator().cuda(rank))` handed on in a list and unpacked (`net_g, net_d =
    nets`): calling it runs Generator.forward every step, whose host noise copied to the device
    is TSL305. A step that only runs the discriminator never runs the generator."""
    found = project(tmp_path, {"models.py": GENERATOR, "train.py": GAN_TRAIN.format(scored=scored)}, capsys)
    assert found == ({("models.py", 11, "TSL305"): 1} if flagged else {})


FLOWS = """\
    import torch
    from torch import nn


    def spline(inputs, bins, tails=None):
        inside = (inputs >= -1) & (inputs <= 1)
        return inputs[inside]


    def transform(inputs, bins, tails=None):
        kwargs = {} if tails is None else {"tails": tails}
        return spline(inputs=inputs, bins=bins, **kwargs)


    class ConvFlow(nn.Module):
        def forward(self, x):
            return transform(x, 8, tails="linear")


    class Flip(nn.Module):
        def forward(self, x):
            return torch.flip(x, [1])
"""

DURATION = """\
    from torch import nn
    import flows


    class Duration(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.flows = nn.ModuleList()
            for _ in range(n):
                self.flows.{add}(flows.ConvFlow())
                self.flows.{add}(flows.Flip())

        def forward(self, x):
            for flow in self.flows:
                x = flow(x)
            return x.sum()


    def fit(loader, opt):
        model = Duration(4).cuda()
        for x in loader:
            model(x.cuda(non_blocking=True)).backward()
            opt.step()
"""


@pytest.mark.parametrize(("add", "flagged"), [("append", True), ("register", False)])
def test_modules_appended_to_a_module_list_run_when_it_is_iterated_and_called(tmp_path, capsys, add, flagged):
    """`self.flows.append(flows.ConvFlow())` in `__init__`, then `for flow in self.flows: x =
    flow(x)` every step: ConvFlow.forward runs, and hands its device input on by keyword next
    to `**kwargs` (`spline(inputs=inputs, **kwargs)`: the keyword is bound all the same), where
    the mask indexing is TSL105. Put there by another method than `append`, nothing says what
    the list holds."""
    found = project(tmp_path, {"flows.py": FLOWS, "duration.py": DURATION.format(add=add)}, capsys)
    assert found == ({("flows.py", 7, "TSL105"): 1} if flagged else {})


@pytest.mark.parametrize(("where", "flagged"), [("Duration.add", True), ("Other.__init__", False), ("nested", False)])
def test_what_a_module_list_holds_is_read_from_its_own_class_methods(tmp_path, capsys, where, flagged):
    """What `self.flows` holds is what the class's own methods append to it, any of them;
    not another class's `self.flows`, nor what a function nested in a method appends (it
    may never run)."""
    forward = "        def forward(self, x):"
    added = {
        "Duration.add": ["        def add(self):", "            self.flows.append(flows.ConvFlow())"],
        "nested": ["        def add(self):", "            def later():", "                self.flows.append(flows.ConvFlow())", "            return later"],
        "Other.__init__": [],
    }[where]
    duration = DURATION.format(add="register").replace(forward, "\n".join([*added, "", forward]))
    if where == "Other.__init__":
        other = ["    class Other(nn.Module):", "        def __init__(self):", "            super().__init__()", "            self.flows = nn.ModuleList()", "            self.flows.append(flows.ConvFlow())", "", ""]
        duration = duration.replace("    def fit(", "\n".join([*other, "    def fit("]))
    found = project(tmp_path, {"flows.py": FLOWS, "duration.py": duration}, capsys)
    assert found == ({("flows.py", 7, "TSL105"): 1} if flagged else {})


AGENTS = """\
    class A2C:
        def __init__(self, net, opt):
            self.net, self.opt = net, opt

        def update(self, obs):
            loss = self.net(obs).pow(2).mean()
            loss.backward()
            self.opt.step()
            return loss.item()


    class PPO:
        def __init__(self, net, opt, epochs):
            self.net, self.opt, self.epochs = net, opt, epochs

        def update(self, obs):
            for _ in range(self.epochs):
                loss = self.net(obs).pow(2).mean()
                loss.backward()
                self.opt.step()
            return 0.0
"""

MAIN = """\
    import torch
    import agents


    def main(algo, net, obs, updates):
        net = net.cuda()
        opt = torch.optim.Adam(net.parameters())
        if algo == "a2c":
            agent = agents.A2C(net, opt)
        else:
            agent = agents.{other}(net, opt, 4)
        for j in range(updates):
            agent.update(obs.cuda(non_blocking=True))
            if j % 10 == 0:
                evaluate(net, obs)


    def evaluate(net, obs):
        print(net(obs.cuda(non_blocking=True)).sum().item())
"""


@pytest.mark.parametrize("other", ["PPO", "A2C"])
def test_a_method_of_an_object_that_is_one_of_several_classes_runs_each(tmp_path, capsys, other):
    """`agent` is an A2C or a PPO agent: `agent.update(obs)` in the `for j in range(updates)`
    loop runs one of their updates, A2C's a step in its own body: the loop is per step and
    A2C.update's `.item()` is TSL101. `j % 10 == 0` gates the evaluation by the loop's own
    counter (whatever its name): evaluate's read is a gated finding."""
    found = project(tmp_path, {"agents.py": AGENTS, "main.py": MAIN.format(other=other)}, capsys)
    assert found == {("agents.py", 9, "TSL101"): 1, ("main.py", 19, "TSL101"): 1}


CLIP = """\
    import torch


    def clip_grad_value_(parameters, clip_value):
        parameters = list(filter(lambda p: p.grad is not None, parameters))
        total = 0
        for p in parameters:
            total += p.grad.data.norm(2).item() ** 2
            p.grad.data.clamp_(min=-clip_value, max=clip_value)
        return total ** 0.5
"""

CLIP_TRAIN = """\
    import torch
    from clip import clip_grad_value_


    def fit(nets, loader, opt):
        net_g, net_d = nets
        for x in loader:
            net_g(x.cuda(non_blocking=True)).sum().backward()
            clip_grad_value_(net_g.parameters(), 1.0)
            opt.step()


    def main(loader, opt):
        fit([torch.nn.Linear(4, 4).{place}(), torch.nn.Linear(4, 1)], loader, opt)
"""


@pytest.mark.parametrize(("place", "flagged"), [("cuda", True), ("cpu", False)])
def test_the_parameters_of_a_model_handed_on_are_where_the_model_is(tmp_path, capsys, place, flagged):
    """`clip_grad_value_(net_g.parameters(), 1.0)` hands another module the parameters of a model
    that arrives unpacked from a list: on the GPU, each `p.grad...item()` of the filtered list is
    a host read per parameter (TSL101); on the CPU, none."""
    found = project(tmp_path, {"clip.py": CLIP, "train.py": CLIP_TRAIN.format(place=place)}, capsys)
    assert found == ({("clip.py", 8, "TSL101"): 1} if flagged else {})
