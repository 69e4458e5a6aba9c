"""The virtual-CUDA layer, op class by op class, run in-process on small snippets.

Each snippet marks the line under test with ``# <-``; the helper returns the (kind, op)
events recorded at that line, and everything recorded elsewhere, so a test can assert both
that the right sync is seen at the right line and that nothing else is.
"""

from __future__ import annotations

import textwrap
from collections import Counter

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

from torchsync_lint.verify import evidence as ev  # noqa: E402
from torchsync_lint.verify.emulate.harness import emulate_script  # noqa: E402

PRELUDE = """\
import torch
import torchmetrics
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""


class Run:
    def __init__(self, record: dict, marked: list[int]) -> None:
        self.record = record
        self.marked = marked
        self.events = record["events"]

    def at(self, index: int = 0) -> Counter:
        line = self.marked[index]
        return Counter((e["kind"], e["op"]) for e in self.events if e["line"] == line)

    def kinds_at(self, index: int = 0) -> Counter:
        line = self.marked[index]
        return Counter(e["kind"] for e in self.events if e["line"] == line)

    def elsewhere(self) -> Counter:
        return Counter((e["line"], e["kind"]) for e in self.events if e["line"] not in self.marked)


def emulate(tmp_path, body: str) -> Run:
    source = PRELUDE + textwrap.dedent(body)
    marked = [n for n, text in enumerate(source.splitlines(), 1) if text.rstrip().endswith("# <-")]
    script = tmp_path / "snippet.py"
    script.write_text(source)
    record = emulate_script(str(script), [])
    assert record["error"] is None, record["error"]
    return Run(record, marked)


def test_item_bool_float_are_scalar_reads_at_the_user_line(tmp_path):
    run = emulate(
        tmp_path,
        """
        loss = torch.randn(4, device=device).sum()
        a = loss.item()  # <-
        b = bool(loss > 0)  # <-
        if torch.isnan(loss).any():  # <-
            pass
        """,
    )
    for index in range(3):
        assert run.at(index) == Counter({(ev.SCALAR_READ, "aten::_local_scalar_dense"): 1})
    assert run.elsewhere() == Counter()


def test_formatting_printing_tolist_and_cpu_are_host_reads(tmp_path):
    run = emulate(
        tmp_path,
        """
        loss = torch.randn(4, device=device).sum()
        logits = torch.randn(2, 3, device=device)
        s = f"{loss:.3f}"  # <-
        print(logits)  # <-
        values = logits.tolist()  # <-
        host = logits.cpu()  # <-
        host_again = logits.to("cpu")  # <-
        """,
    )
    assert run.kinds_at(0) == Counter({ev.SCALAR_READ: 1})
    assert run.at(1) == Counter({(ev.HOST_READ, "Tensor.__repr__"): 1})
    assert run.at(2) == Counter({(ev.HOST_READ, "Tensor.tolist"): 1})
    assert run.at(3) == Counter({(ev.D2H_COPY, "Tensor.cpu"): 1})
    assert run.at(4) == Counter({(ev.D2H_COPY, "Tensor.to"): 1})
    assert run.elsewhere() == Counter()


def test_fstrings_str_percent_and_logging(tmp_path):
    run = emulate(
        tmp_path,
        """
        import io, logging
        log = logging.getLogger("verify-test")
        log.setLevel(logging.INFO)
        log.addHandler(logging.StreamHandler(io.StringIO()))
        log.propagate = False
        loss = torch.randn(4, device=device).sum()
        logits = torch.randn(2, 3, device=device)
        a = f"{logits}"  # <-
        b = str(loss)  # <-
        c = "%.2f" % loss  # <-
        log.info("loss=%s", loss)  # <-
        log.debug("loss=%s", loss)  # <-
        """,
    )
    assert run.at(0) == Counter({(ev.HOST_READ, "Tensor.__format__"): 1})
    assert run.at(1) == Counter({(ev.HOST_READ, "Tensor.__repr__"): 1})
    assert run.kinds_at(2) == Counter({ev.SCALAR_READ: 1})
    assert run.at(3) == Counter({(ev.HOST_READ, "Tensor.__repr__"): 1})  # formatted inside logging
    assert run.at(4) == Counter()  # DEBUG is disabled: the message is never formatted
    assert run.elsewhere() == Counter()


def test_device_to_host_result_is_a_host_tensor(tmp_path):
    run = emulate(
        tmp_path,
        """
        host = torch.ones(3, device=device).cpu()  # <-
        total = host.sum().item()  # <-
        """,
    )
    assert run.kinds_at(0) == Counter({ev.D2H_COPY: 1})
    assert run.at(1) == Counter()  # reading a host tensor is free


def test_dynamic_shape_ops(tmp_path):
    run = emulate(
        tmp_path,
        """
        x = torch.randn(16, device=device)
        idx = torch.nonzero(x > 0)  # <-
        picked = x[x > 0]  # <-
        x[x < 0] = 0.0  # <-
        uniq = torch.unique(x.round())  # <-
        sel = torch.masked_select(x, x > 1)  # <-
        rep = torch.repeat_interleave(x, torch.ones(16, dtype=torch.long, device=device))  # <-
        rep_sized = torch.repeat_interleave(x, torch.ones(16, dtype=torch.long, device=device), output_size=16)  # <-
        """,
    )
    assert run.at(0) == Counter({(ev.DYNAMIC_SHAPE, "aten::nonzero"): 1})
    assert run.at(1) == Counter({(ev.DYNAMIC_SHAPE, "aten::index (bool mask)"): 1})
    assert run.kinds_at(2) == Counter({ev.DYNAMIC_SHAPE: 1})
    assert "index_put" in next(iter(run.at(2)))[1]
    assert run.kinds_at(3) == Counter({ev.DYNAMIC_SHAPE: 1})
    assert run.at(4) == Counter({(ev.DYNAMIC_SHAPE, "aten::masked_select"): 1})
    assert run.at(5) == Counter({(ev.DYNAMIC_SHAPE, "aten::repeat_interleave"): 1})
    assert run.at(6) == Counter()  # output_size given: no sync


def test_integer_index_is_not_a_mask(tmp_path):
    run = emulate(
        tmp_path,
        """
        x = torch.randn(16, device=device)
        picked = x[torch.arange(4, device=device)]  # <-
        """,
    )
    assert run.at(0) == Counter()


def test_mean_metric_update_syncs_twice_at_the_user_line(tmp_path):
    run = emulate(
        tmp_path,
        """
        metric = torchmetrics.MeanMetric().to(device)
        fast = torchmetrics.MeanMetric(nan_strategy="disable").to(device)
        loss = torch.randn(4, device=device).mean()
        metric.update(loss)  # <-
        fast.update(loss)  # <-
        metric.update(0.5)  # <-
        """,
    )
    # `if nans.any() or nans_weight.any():` inside torchmetrics, attributed to our line
    assert run.at(0) == Counter({(ev.SCALAR_READ, "aten::_local_scalar_dense"): 2})
    assert run.at(1) == Counter()
    assert run.kinds_at(2) == Counter({ev.SCALAR_READ: 2, ev.H2D_BLOCKING: 1})
    assert run.elsewhere() == Counter()


def test_multiclass_accuracy_bincount(tmp_path):
    run = emulate(
        tmp_path,
        """
        from torchmetrics.classification import MulticlassAccuracy
        acc = MulticlassAccuracy(num_classes=5).to(device)
        micro = MulticlassAccuracy(num_classes=5, average="micro", validate_args=False).to(device)
        logits = torch.randn(8, 5, device=device)
        target = torch.randint(0, 5, (8,), device=device)
        acc.update(logits, target)  # <-
        micro.update(logits, target)  # <-
        """,
    )
    assert run.at(0) == Counter({(ev.BINCOUNT, "aten::bincount"): 1})
    assert run.at(1) == Counter()


def test_host_to_device_copies_blocking_pageable_pinned(tmp_path):
    run = emulate(
        tmp_path,
        """
        host = torch.randn(4)
        a = host.to(device)  # <-
        b = host.to(device, non_blocking=True)  # <-
        c = host.pin_memory().to(device, non_blocking=True)  # <-
        d = host.cuda()  # <-
        e = a.to(device)  # <-
        f = host.to(a)  # <-
        """,
    )
    assert run.at(0) == Counter({(ev.H2D_BLOCKING, "Tensor.to"): 1})
    assert run.at(1) == Counter({(ev.H2D_PAGEABLE, "Tensor.to"): 1})
    assert run.at(2) == Counter()
    assert run.at(3) == Counter({(ev.H2D_BLOCKING, "Tensor.cuda"): 1})
    assert run.at(4) == Counter()  # already on the device
    assert run.at(5) == Counter({(ev.H2D_BLOCKING, "Tensor.to"): 1})  # to(other) follows other onto the GPU


def test_tensor_factories_with_host_data(tmp_path):
    run = emulate(
        tmp_path,
        """
        loss = torch.randn(4, device=device).mean()
        w = torch.tensor(1.0, device=device)  # <-
        v = torch.as_tensor([1.0, 2.0], device=loss.device)  # <-
        z = torch.zeros(3, device=device)  # <-
        host = torch.tensor(1.0)  # <-
        same = torch.as_tensor(loss, device=device)  # <-
        """,
    )
    assert run.kinds_at(0) == Counter({ev.H2D_BLOCKING: 1})
    assert run.kinds_at(1) == Counter({ev.H2D_BLOCKING: 1})  # loss.device reads as cuda
    assert run.at(2) == Counter()  # allocated on the device: no copy
    assert run.at(3) == Counter()
    assert run.at(4) == Counter()


def test_explicit_synchronize_calls(tmp_path):
    run = emulate(
        tmp_path,
        """
        torch.cuda.synchronize()  # <-
        torch.cuda.current_stream().synchronize()  # <-
        event = torch.cuda.Event()
        event.record()
        event.synchronize()  # <-
        """,
    )
    assert run.at(0) == Counter({(ev.EXPLICIT_SYNC, "torch.cuda.synchronize"): 1})
    assert run.at(1) == Counter({(ev.EXPLICIT_SYNC, "Stream.synchronize"): 1})
    assert run.at(2) == Counter({(ev.EXPLICIT_SYNC, "Event.synchronize"): 1})


def test_dataloader_main_process_and_unpinned_batches(tmp_path):
    run = emulate(
        tmp_path,
        """
        data = TensorDataset(torch.randn(8, 2), torch.randn(8))
        loader = DataLoader(data, batch_size=4)  # <-
        for x, y in loader:
            x = x.to(device, non_blocking=True)  # <-
        """,
    )
    assert run.at(0) == Counter(
        {(ev.DATALOADER_MAIN_PROCESS, "DataLoader.__iter__ (num_workers=0)"): 1, (ev.DATALOADER_UNPINNED, "Tensor.to"): 2}
    )
    assert run.at(1) == Counter({(ev.H2D_PAGEABLE, "Tensor.to"): 2})


def test_pinned_multiworker_loader_with_non_blocking_copy_records_nothing(tmp_path):
    run = emulate(
        tmp_path,
        """
        data = TensorDataset(torch.randn(8, 2), torch.randn(8))
        loader = DataLoader(data, batch_size=4, num_workers=2, pin_memory=True, persistent_workers=True)  # <-
        for x, y in loader:
            x = x.to(device, non_blocking=True)  # <-
            y = y.to(device, non_blocking=True)  # <-
        """,
    )
    assert run.record["events"] == []
    assert run.record["step_basis"] == "batches" and run.record["total_steps"] == 2


def test_host_normalisation_is_traced_from_uint8_to_the_copy(tmp_path):
    run = emulate(
        tmp_path,
        """
        images = torch.randint(0, 256, (4, 3), dtype=torch.uint8)
        normalised = (images.float() / 255.0 - 0.5) / 0.25  # <-
        x = normalised.to(device, non_blocking=True)  # <-
        raw = images.to(device, non_blocking=True).float().div_(255)  # <-
        """,
    )
    assert run.kinds_at(0) == Counter({ev.HOST_NORMALIZED_H2D: 1})
    assert run.kinds_at(1) == Counter({ev.HOST_NORMALIZED_H2D: 1, ev.H2D_PAGEABLE: 1})
    assert run.kinds_at(2) == Counter({ev.H2D_PAGEABLE: 1})  # uint8 copy, normalised on the device


def test_cpu_only_tensors_record_nothing(tmp_path):
    run = emulate(
        tmp_path,
        """
        x = torch.randn(8)
        a = x.sum().item()
        print(x)
        b = x.tolist()
        c = x[x > 0]
        d = torch.nonzero(x)
        e = torch.tensor(1.0)
        f = x.numpy()
        if x.any():
            pass
        """,
    )
    assert run.record["events"] == []


def test_device_properties_read_as_cuda_and_numpy_fails_like_on_a_gpu(tmp_path):
    script = tmp_path / "props.py"
    script.write_text(
        PRELUDE
        + "x = torch.ones(2, device=device)\n"
        + "assert x.device.type == 'cuda' and x.is_cuda\n"
        + "assert torch.ones(2).device.type == 'cpu'\n"
        + "x.numpy()\n"
    )
    record = emulate_script(str(script), [])
    assert record["exit_code"] == 1
    assert "TypeError: can't convert cuda:0 device type tensor to numpy" in record["error"]


def test_model_parameters_metric_states_and_optimizer_are_virtual(tmp_path):
    run = emulate(
        tmp_path,
        """
        model = torch.nn.Linear(3, 2).to(device)
        on_device = torch.nn.Linear(3, 2, device=device)
        opt = torch.optim.Adam(list(model.parameters()) + list(on_device.parameters()))
        loss = (model(torch.randn(4, 3, device=device)) + on_device(torch.randn(4, 3, device=device))).sum()
        loss.backward()
        opt.step()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        w = model.weight.sum().item()  # <-
        g = on_device.weight.grad.sum().item()  # <-
        """,
    )
    assert run.kinds_at(0) == Counter({ev.SCALAR_READ: 1})
    assert run.kinds_at(1) == Counter({ev.SCALAR_READ: 1})
    # Adam's CPU step counter and clip_grad_norm_'s internal device grouping are not syncs.
    assert run.elsewhere() == Counter()


def test_steps_are_counted_by_the_optimizer(tmp_path):
    run = emulate(
        tmp_path,
        """
        model = torch.nn.Linear(2, 1).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(4):
            loss = model(torch.randn(3, 2, device=device)).sum()
            loss.backward()
            opt.step()
            v = loss.item()  # <-
        """,
    )
    assert run.record["step_basis"] == "optimizer" and run.record["total_steps"] == 4
    # item() runs after opt.step(), so the k-th read belongs to step k (1..4)
    assert sorted(e["step"] for e in run.events if e["line"] == run.marked[0]) == [1, 2, 3, 4]


def test_two_optimizers_stepping_each_iteration_count_one_step(tmp_path):
    """A per-step rate is per training iteration, not per optimizer.step() call."""
    run = emulate(
        tmp_path,
        """
        encoder = torch.nn.Linear(2, 2).to(device)
        head = torch.nn.Linear(2, 1).to(device)
        opt_encoder = torch.optim.SGD(encoder.parameters(), lr=0.1)
        opt_head = torch.optim.SGD(head.parameters(), lr=0.1)
        for _ in range(5):
            loss = head(encoder(torch.randn(3, 2, device=device))).sum()
            loss.backward()
            opt_encoder.step()
            opt_head.step()
            v = loss.item()  # <-
        """,
    )
    assert run.record["step_basis"] == "optimizer" and run.record["total_steps"] == 5
    assert sorted(e["step"] for e in run.events if e["line"] == run.marked[0]) == [1, 2, 3, 4, 5]


def test_an_optimizer_stepping_several_times_per_round_ticks_each_time(tmp_path):
    """Five discriminator steps per generator step: the discriminator's steps are the clock,
    the generator's step joins the round in progress."""
    run = emulate(
        tmp_path,
        """
        disc = torch.nn.Linear(2, 1).to(device)
        gen = torch.nn.Linear(2, 2).to(device)
        opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
        opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
        for _ in range(2):
            for _ in range(5):
                disc(torch.randn(3, 2, device=device)).sum().backward()
                opt_d.step()
            disc(gen(torch.randn(3, 2, device=device))).sum().backward()
            opt_g.step()
        """,
    )
    assert run.record["total_steps"] == 10


def test_patches_do_not_leak_out_of_a_run(tmp_path):
    import torch.nn as nn
    from torch.utils.data import DataLoader

    before = (torch.cuda.is_available, nn.Module.to, nn.Module.cuda, DataLoader.__init__, DataLoader.__iter__, nn.Parameter.__new__)
    emulate(tmp_path, "x = torch.ones(2, device=device).sum().item()\n")
    after = (torch.cuda.is_available, nn.Module.to, nn.Module.cuda, DataLoader.__init__, DataLoader.__iter__, nn.Parameter.__new__)
    assert before == after
    assert torch.cuda.is_available() is False  # the CPU wheel again
    assert "_torchsync_settings" not in vars(DataLoader)


def test_a_new_epoch_marks_its_step_as_a_loop_boundary(tmp_path):
    run = emulate(
        tmp_path,
        """
        model = torch.nn.Linear(2, 1).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=2, num_workers=2, pin_memory=True)
        for epoch in range(2):
            losses = []
            for (x,) in loader:
                loss = model(x.to(device, non_blocking=True)).sum()
                loss.backward()
                opt.step()
                losses.append(loss.detach())
            epoch_loss = torch.stack(losses).mean().item()  # <-
        """,
    )
    (first, second) = sorted(e["step"] for e in run.events if e["line"] == run.marked[0])
    assert (first, second) == (4, 8)
    assert run.record["excluded_steps"] == [0, 4]  # the second epoch's loop starts during step 4


def test_ddp_script_that_picks_nccl_runs_and_its_buckets_live_on_the_device(tmp_path):
    init_file = tmp_path / "pg"
    run = emulate(
        tmp_path,
        f"""
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend, init_method="file://{init_file}", rank=0, world_size=1)
        model = DDP(torch.nn.Linear(4, 2).to(device), device_ids=[0])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        metric = torchmetrics.MeanMetric()  # kept on the CPU
        for step in range(4):
            loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
            opt.zero_grad()
            loss.backward()  # <-
            opt.step()
            metric.update(loss.detach().cpu())  # <-
        dist.destroy_process_group()
        """,
    )
    assert run.at(0) == Counter()  # gradient buckets are device tensors: no copies
    assert run.at(1) == Counter({(ev.D2H_COPY, "Tensor.cpu"): 4})
    assert [e for e in run.events if e["step"] and e["step"] >= 1 and e["line"] not in run.marked] == []
