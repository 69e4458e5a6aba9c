"""The virtual-CUDA layer, op class by op class, run in-process on small snippets.

Each snippet marks the line under test with ``# <-``; the helper returns the (kind, op)
events recorded at that line, and everything recorded elsewhere, so a test can assert both
that the right sync is seen at the right line and that nothing else is.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import textwrap
from collections import Counter
from pathlib import Path

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
        x[x < 0] = x.min()  # <-
        uniq = torch.unique(x.round())  # <-
        sel = torch.masked_select(x, x > 1)  # <-
        rep = torch.repeat_interleave(x, torch.ones(16, dtype=torch.long, device=device))  # <-
        rep_sized = torch.repeat_interleave(x, torch.ones(16, dtype=torch.long, device=device), output_size=16)  # <-
        x[x < 0] = 0.0  # <-
        x[x < 0] += 1.0  # <-
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
    # one mask and a host scalar: ATen runs masked_fill_, no sync (as an H200 showed)
    assert run.at(7) == Counter()
    # `+=` reads x[mask] first (index: a sync) and stores a device value back (index_put_: another)
    assert run.kinds_at(8) == Counter({ev.DYNAMIC_SHAPE: 2})


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


# -- what training scripts call on torch.cuda (issue 14, item 3) ----------------------------
# Each of these snippets crashed the emulate backend before it answered as a virtual GPU
# ("Torch not compiled with CUDA enabled", "unknown parameter type", ...), unless noted.


def test_device_queries_and_memory_counters_answer_as_one_virtual_gpu(tmp_path):
    run = emulate(
        tmp_path,
        """
        props = torch.cuda.get_device_properties(0)
        assert torch.cuda.get_device_properties() is props or torch.cuda.get_device_properties() == props
        assert props.name == torch.cuda.get_device_name(0) and "virtual" in props.name
        assert (props.major, props.minor) == torch.cuda.get_device_capability()
        assert props.total_memory > 0 and props.multi_processor_count > 0
        free, total = torch.cuda.mem_get_info()
        assert total == props.total_memory and 0 <= free <= total
        assert torch.cuda.memory.mem_get_info() == (free, total)
        torch.cuda.set_device(0)
        with torch.cuda.device(0):
            x = torch.ones(4, device=device)
        assert torch.cuda.device_count() == 1 and torch.cuda.current_device() == 0
        assert torch.cuda.is_bf16_supported()
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.empty_cache()
        used = (torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated(), torch.cuda.memory_reserved())
        summary = torch.cuda.memory_summary()
        torch.cuda.manual_seed_all(0)
        rng = torch.cuda.get_rng_state()
        torch.cuda.nvtx.range_push("step")
        torch.cuda.nvtx.range_pop()
        with torch.cuda.nvtx.range("fwd"):
            pass
        print(f"{props.name}: {props.total_memory / 2**30:.0f} GiB, {used}, {summary!r}, {rng.shape}")
        """,
    )
    assert run.events == []  # queries are host-side: nothing to record


def test_the_device_generic_accelerator_api_answers_with_the_virtual_gpu(tmp_path):
    # accelerate >= 1.16 picks its device from torch.accelerator: on the CPU wheel it said
    # "no accelerator", the script ran on the CPU and no finding could be confirmed.
    run = emulate(
        tmp_path,
        """
        assert torch.accelerator.is_available() and torch.accelerator.device_count() == 1
        chosen = torch.accelerator.current_accelerator()
        assert chosen.type == "cuda" and torch.accelerator.current_device_index() == 0
        assert not torch.accelerator.current_stream().is_capturing()
        model = torch.nn.Linear(4, 2).to(chosen)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)  # step() asks the stream for capture state
        loss = model(torch.randn(3, 4, device=chosen)).pow(2).mean()
        loss.backward()
        opt.step()
        value = loss.item()  # <-
        torch.accelerator.synchronize()  # <-
        """,
    )
    assert run.at(0) == Counter({(ev.SCALAR_READ, "aten::_local_scalar_dense"): 1})
    assert [kind for kind, _ in run.at(1)] == [ev.EXPLICIT_SYNC]


def test_event_timing_measures_host_time_and_its_synchronize_is_a_sync(tmp_path):
    run = emulate(
        tmp_path,
        """
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        y = torch.randn(64, 64, device=device) @ torch.randn(64, 64, device=device)
        end.record()
        end.synchronize()  # <-
        ms = start.elapsed_time(end)
        assert ms > 0, ms
        assert isinstance(start, torch.cuda.Event)
        untimed = torch.cuda.Event()
        untimed.record()
        try:
            untimed.elapsed_time(end)  # the same error as on a GPU
        except ValueError as exc:
            assert "enable_timing" in str(exc)
        else:
            raise AssertionError("elapsed_time without enable_timing must fail as on a GPU")
        """,
    )
    assert run.at(0) == Counter({(ev.EXPLICIT_SYNC, "Event.synchronize"): 1})
    assert run.elsewhere() == Counter()


def test_side_streams_select_record_and_synchronize(tmp_path):
    run = emulate(
        tmp_path,
        """
        side = torch.cuda.Stream()
        main_stream = torch.cuda.current_stream()
        with torch.cuda.stream(side):
            assert torch.cuda.current_stream() is side
            y = torch.ones(8, device=device) * 2
        assert torch.cuda.current_stream() is main_stream
        main_stream.wait_stream(side)
        y.record_stream(main_stream)
        done = side.record_event()
        main_stream.wait_event(done)
        side.synchronize()  # <-
        total = y.sum().item()  # <-
        """,
    )
    assert run.at(0) == Counter({(ev.EXPLICIT_SYNC, "Stream.synchronize"): 1})
    assert run.at(1) == Counter({(ev.SCALAR_READ, "aten::_local_scalar_dense"): 1})  # made on the side stream: still a device tensor
    assert run.elsewhere() == Counter()


@pytest.mark.parametrize(
    "autocast",
    ['torch.cuda.amp.autocast()', 'torch.autocast("cuda")', 'torch.amp.autocast("cuda", dtype=torch.bfloat16)', "torch.autocast(device_type=device.type)"],
)
def test_autocast_for_cuda_runs_and_syncs_are_still_seen(tmp_path, autocast):
    # These ran before too (the CPU wheel accepts a cuda autocast and leaves CPU ops alone):
    # kept as a guard. Dtypes stay float32 on the CPU, which does not change any sync.
    run = emulate(
        tmp_path,
        f"""
        import warnings
        warnings.simplefilter("ignore", FutureWarning)
        model = torch.nn.Linear(8, 2).to(device)
        with {autocast}:
            loss = model(torch.randn(4, 8, device=device)).float().pow(2).mean()
            value = loss.item()  # <-
        """,
    )
    assert run.at(0) == Counter({(ev.SCALAR_READ, "aten::_local_scalar_dense"): 1})
    assert run.elsewhere() == Counter()


GRAD_SCALER_LOOP = """
import warnings
warnings.simplefilter("ignore", FutureWarning)
model = torch.nn.Linear(8, 2).to(device)
opt = OPTIMIZER
scaler = SCALER
for _ in range(4):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda"):
        loss = model(torch.randn(4, 8, device=device)).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)  # <-
    scaler.update()
assert scaler.get_scale() > 0  # reads the device-side scale, a sync too: # <-
"""


@pytest.mark.parametrize("scaler", ['torch.cuda.amp.GradScaler()', 'torch.amp.GradScaler("cuda")'])
def test_grad_scaler_step_reads_found_inf_once_per_step(tmp_path, scaler):
    # GradScaler ran before too; what is new is that its sync is named. It is a real sync on a
    # GPU: _maybe_opt_step does `sum(v.item() for v in found_inf_per_device.values())`.
    body = GRAD_SCALER_LOOP.replace("SCALER", scaler).replace("OPTIMIZER", "torch.optim.SGD(model.parameters(), lr=0.1)")
    run = emulate(tmp_path, body)
    assert run.at(0) == Counter({(ev.SCALAR_READ, "aten::_local_scalar_dense in GradScaler.step (found_inf.item())"): 4})
    assert run.at(1) == Counter({(ev.SCALAR_READ, "aten::_local_scalar_dense"): 1})
    assert run.elsewhere() == Counter()
    assert run.record["step_basis"] == "optimizer" and run.record["total_steps"] == 4


def test_grad_scaler_with_a_fused_optimizer_does_not_sync(tmp_path):
    # A fused optimizer takes found_inf as a tensor (_step_supports_amp_scaling): no .item().
    body = GRAD_SCALER_LOOP.replace("SCALER", 'torch.amp.GradScaler("cuda")').replace(
        "OPTIMIZER", "torch.optim.Adam(model.parameters(), lr=0.1, fused=True)"
    )
    run = emulate(tmp_path, body)
    assert run.at(0) == Counter()
    assert run.at(1) == Counter({(ev.SCALAR_READ, "aten::_local_scalar_dense"): 1})
    assert run.elsewhere() == Counter()
    assert run.record["total_steps"] == 4


def test_torch_compile_runs_eagerly_and_says_so(tmp_path):
    run = emulate(
        tmp_path,
        """
        model = torch.compile(torch.nn.Linear(4, 2).to(device))  # <-

        @torch.compile  # <-
        def loss_fn(out):
            return out.pow(2).mean()

        @torch.compile(mode="max-autotune", fullgraph=True)  # <-
        def scale(x):
            return x * 2

        other = torch.nn.Linear(2, 2).to(device)
        other.compile()  # <-
        loss = loss_fn(scale(other(model(torch.randn(3, 4, device=device)))))
        value = loss.item()  # <-
        """,
    )
    for index in range(3):
        ((kind, op),) = run.at(index)
        assert kind == ev.EMULATED and op.startswith("torch.compile: the model runs eagerly"), run.at(index)
    assert [kind for kind, _ in run.at(3)] == [ev.EMULATED]
    assert run.at(4) == Counter({(ev.SCALAR_READ, "aten::_local_scalar_dense"): 1})  # the eager model's syncs are seen
    assert run.elsewhere() == Counter()


def test_cudnn_and_tf32_flags_are_settings_and_are_restored(tmp_path):
    # Setting these never crashed; the run now leaves them as it found them.
    before = (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic, torch.backends.cuda.matmul.allow_tf32)
    run = emulate(
        tmp_path,
        """
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.deterministic = False
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cuda.matmul.allow_tf32 = True
        conv = torch.nn.Conv2d(3, 4, 3).to(device)
        lstm = torch.nn.LSTM(4, 4, batch_first=True).to(device)
        out, _ = lstm(conv(torch.randn(2, 3, 5, 5, device=device)).mean(-1).transpose(1, 2))
        value = out.sum().item()  # <-
        """,
    )
    assert run.at(0) == Counter({(ev.SCALAR_READ, "aten::_local_scalar_dense"): 1})
    assert run.elsewhere() == Counter()
    assert (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic, torch.backends.cuda.matmul.allow_tf32) == before


def test_cuda_stand_ins_do_not_leak_out_of_a_run(tmp_path):
    before = (torch.cuda.get_device_properties, torch.cuda.Event, torch.cuda.Stream, torch.compile, torch.cuda.memory.mem_get_info)
    meta_path = list(__import__("sys").meta_path)
    emulate(tmp_path, "x = torch.cuda.get_device_properties(0)\n")
    after = (torch.cuda.get_device_properties, torch.cuda.Event, torch.cuda.Stream, torch.compile, torch.cuda.memory.mem_get_info)
    assert before == after and __import__("sys").meta_path == meta_path
    assert "record_stream" not in vars(torch.Tensor)


# -- TSL304 by provenance, with a torchvision stand-in (issue 14, item 4) ---------------------
# torchvision does not load on this machine, so tests/verify_data/standin_torchvision (written
# for these tests: torchvision's layout and semantics for the inputs the fixtures use) stands in.
STANDIN_TORCHVISION = Path(__file__).resolve().parent / "verify_data" / "standin_torchvision"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def standin_torchvision(monkeypatch):
    monkeypatch.syspath_prepend(str(STANDIN_TORCHVISION))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(STANDIN_TORCHVISION), os.environ.get("PYTHONPATH")])))
    yield
    # Later tests must see the real situation again (find_spec("torchvision") is None here).
    for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
        del sys.modules[name]


def test_host_normalisation_is_attributed_to_the_transform_that_made_the_float(tmp_path, standin_torchvision):
    run = emulate(
        tmp_path,
        """
        import torchvision
        from torchvision import transforms
        from torchvision.transforms import v2
        v1 = transforms.Compose([
            transforms.ToTensor(),  # <-
            transforms.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25)),  # <-
        ])
        v2_pipeline = v2.Compose([
            v2.ToImage(),
            v2.ToDtype(torch.float32, scale=True),  # <-
            v2.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25]),
        ])
        uint8_only = v2.Compose([v2.PILToTensor()])  # <-
        for transform in (v1, v2_pipeline, uint8_only):
            data = torchvision.datasets.FakeData(size=8, image_size=(3, 4, 4), transform=transform)
            loader = DataLoader(data, batch_size=4, num_workers=2, pin_memory=True)
            for images, labels in loader:
                images = images.to(device, non_blocking=True)  # <-
                labels = labels.to(device, non_blocking=True)
        """,
    )
    normalised = (ev.HOST_NORMALIZED_H2D, "Tensor.to of host-normalized torch.float32 (4x the bytes of uint8)")
    assert run.at(0) == Counter({normalised: 2})  # ToTensor made the float: two batches reached the copy
    assert run.at(1) == Counter()  # Normalize only carried it on
    assert run.at(2) == Counter({normalised: 2})  # v2.ToDtype(float32, scale=True)
    assert run.at(3) == Counter()  # uint8 all the way: nothing to report
    assert run.at(4) == Counter({normalised: 4})  # the copy line sees both float pipelines
    assert run.elsewhere() == Counter()


def test_every_torchvision_fixture_confirms_its_markers_with_the_standin(tmp_path, standin_torchvision):
    from torchsync_lint.cli import main
    from torchsync_lint.markers import read_markers
    from torchsync_lint.verify.scripts import discover, load_script

    scripts, *_ = discover([str(FIXTURES)])
    with_tsl304 = [p for p in scripts if any(m.code == "TSL304" for m in read_markers(p))]
    needs_torchvision = [p for p in scripts if "torchvision" in load_script(p).requires]
    # The plain-torch TSL304 fixtures run in test_verify_fixtures.py (nothing to skip them);
    # the torchvision ones are skipped there and run here.
    assert {p for p in with_tsl304 if "torchvision" not in load_script(p).requires} and len(needs_torchvision) >= 3
    out = tmp_path / "torchvision.json"
    code = main(["verify", *needs_torchvision, "--backend", "emulate", "--jobs", "2", "--format", "json", "--output-file", str(out)])
    entries = json.loads(out.read_text())
    assert [e for e in entries if e["failed"] or e["status"] == "skipped"] == [] and code == 0
    tsl304 = {(e["path"], e["line"]): e["status"] for e in entries if e["code"] == "TSL304" and e["marker"] == "expect"}
    expected = {(p, m.line) for p in needs_torchvision for m in read_markers(p) if m.code == "TSL304"}
    assert set(tsl304) == expected and set(tsl304.values()) == {"confirmed"}


def test_a_transform_s_float_output_is_host_normalised_only_for_a_uint8_or_normalised_input(tmp_path, standin_torchvision):
    """The provenance set at a transform's boundary (library_hooks._carry_across_the_call):
    torchvision v2 hands each kernel ``image.as_subclass(torch.Tensor)`` and wraps its result
    again, so the float that leaves the transform is a new tensor object. A float image that
    never was uint8 (`torch.rand`) stays unreported through the same transforms."""
    run = emulate(
        tmp_path,
        """
        from torchvision import tv_tensors
        from torchvision.transforms import v2
        from_uint8 = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.5] * 3, [0.25] * 3)])  # <-
        from_float = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.5] * 3, [0.25] * 3)])  # <-
        uint8_image = torch.randint(0, 256, (3, 4, 4), dtype=torch.uint8).as_subclass(tv_tensors.Image)
        float_image = torch.rand(3, 4, 4).as_subclass(tv_tensors.Image)
        a = from_uint8(uint8_image).to(device)  # <-
        b = from_float(float_image).to(device)  # <-
        """,
    )
    normalised = (ev.HOST_NORMALIZED_H2D, "Tensor.to of host-normalized torch.float32 (4x the bytes of uint8)")
    assert run.at(0) == Counter({normalised: 1})  # made by ToDtype, on this line; Normalize carries it
    assert run.at(1) == Counter()
    blocking = (ev.H2D_BLOCKING, "Tensor.to")
    assert run.at(2) == Counter({normalised: 1, blocking: 1})
    assert run.at(3) == Counter({blocking: 1})  # a float image from the start: nothing normalised on the host
    assert run.elsewhere() == Counter()


# -- a gated compute() under DDP (issue 14, item 5) -----------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def ddp_fixtures_on(monkeypatch):
    # The metrics fixtures initialise their (NCCL) process group only when asked to.
    monkeypatch.setenv("TORCHSYNC_FIXTURE_DDP", "1")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_gated_metric_compute_under_ddp_is_gated_evidence_not_a_failure(tmp_path, ddp_fixtures_on):
    from torchsync_lint.verify.evidence import RuntimeEvent
    from torchsync_lint.verify.matching import match_script
    from torchsync_lint.verify.steady_state import SteadyWindow

    script = FIXTURES / "clean" / "metrics_optimized.py"
    compute_line = _line_of(script, "history.append({name: metric.compute()")

    def verify_in_process(log_every: int):
        record = emulate_script(str(script), ["--steps", "8", "--log-every", str(log_every)])
        assert record["error"] is None, record["error"]
        events = [RuntimeEvent.from_json(e) for e in record["events"]]
        window = SteadyWindow(record["step_basis"], record["total_steps"], 2, record["excluded_steps"])
        return match_script(str(script), [], events, window, "emulate")

    (gated,) = verify_in_process(log_every=4)
    assert (gated.line, gated.status, gated.failed) == (compute_line, "gated", False)
    assert {item.kind for item in gated.evidence} == {ev.DISTRIBUTED_SYNC}
    assert any(item.op.startswith("dist.barrier") for item in gated.evidence)
    # The same gather every step is a per-step sync of a clean script: that still fails.
    every_step = verify_in_process(log_every=1)
    assert [(e.line, e.status, e.failed) for e in every_step] == [(compute_line, "runtime-only", True)]


def test_ddp_metrics_fixtures_verify_with_their_process_group(tmp_path, ddp_fixtures_on):
    from torchsync_lint.cli import main

    # The friends of metrics_optimized.py (checked in-process above), through the CLI.
    scripts = [FIXTURES / "metrics" / "ddp_cpu_metric.py", FIXTURES / "metrics" / "gpu_step_time_scalar.py"]
    out = tmp_path / "ddp.json"
    # --jobs 1: each fixture's process group listens on MASTER_PORT.
    code = main(["verify", *map(str, scripts), "--backend", "emulate", "--jobs", "1", "--format", "json", "--output-file", str(out)])
    entries = json.loads(out.read_text())
    assert [e for e in entries if e["failed"]] == [] and code == 0
    gated = {(Path(e["path"]).name, e["line"]) for e in entries if e["status"] == "gated"}
    assert gated == {(s.name, _line_of(s, "history.append({name: metric.compute()")) for s in scripts}
    assert not [e for e in entries if e["status"] == "runtime-only"]


def test_an_unhashable_transform_subclass_still_runs(tmp_path, standin_torchvision):
    # __eq__ without __hash__ makes instances unhashable: no provenance line, but no crash.
    run = emulate(
        tmp_path,
        """
        import numpy as np
        from torchvision import transforms
        class Comparable(transforms.ToTensor):
            def __eq__(self, other):
                return type(other) is type(self)
        to_tensor = Comparable()
        image = to_tensor(np.zeros((4, 4, 3), dtype=np.uint8))  # <-
        x = image.to(device)  # <-
        """,
    )
    assert run.kinds_at(0) == Counter({ev.HOST_NORMALIZED_H2D: 1})  # falls back to the user line
    assert run.kinds_at(1) == Counter({ev.HOST_NORMALIZED_H2D: 1, ev.H2D_BLOCKING: 1})
