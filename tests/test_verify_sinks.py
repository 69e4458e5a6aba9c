"""The emulate backend with logging libraries: their host reads of a virtual-cuda tensor are
recorded at the user's line, and the script goes on as it would on a GPU. Each test skips
when its library is not installed (the `dev` extra installs them)."""

from __future__ import annotations

import textwrap
from collections import Counter

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

from torchsync_lint.verify import evidence as ev  # noqa: E402
from torchsync_lint.verify.emulate.harness import emulate_script  # noqa: E402

PRELUDE = 'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


class Run:
    """The events of one emulated snippet: at the line marked `# <-`, and elsewhere."""

    def __init__(self, record: dict, marked: int) -> None:
        self.events = record["events"]
        self.marked = marked

    def kinds_at(self) -> Counter:
        return Counter(e["kind"] for e in self.events if e["line"] == self.marked)

    def elsewhere(self) -> Counter:
        return Counter((e["line"], e["kind"]) for e in self.events if e["line"] != self.marked)


def emulate(tmp_path, body: str) -> Run:
    source = PRELUDE + textwrap.dedent(body)
    (marked,) = [n for n, text in enumerate(source.splitlines(), 1) if text.rstrip().endswith("# <-")]
    script = tmp_path / "snippet.py"
    script.write_text(source)
    record = emulate_script(str(script), [])
    assert record["error"] is None, record["error"]
    return Run(record, marked)

LOSS = """
model = torch.nn.Linear(4, 1).to(device)
loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
"""


def test_tensorboard_add_scalar_is_a_device_to_host_copy_and_then_works(tmp_path):
    """make_np's `.detach().cpu().numpy()` lives inside torch/utils/tensorboard: its `.cpu()`
    is the logger's read, not torch's device plumbing (it used to stay virtual, and `.numpy()`
    then raised "can't convert cuda:0 device type tensor to numpy")."""
    pytest.importorskip("tensorboard")
    run = emulate(
        tmp_path,
        LOSS
        + f"""
import tempfile
from torch.utils.tensorboard import SummaryWriter
writer = SummaryWriter(tempfile.mkdtemp(dir={str(tmp_path)!r}))
writer.add_scalar("loss", loss, 0)  # <-
writer.add_scalar("host", 0.5, 0)
writer.close()
""",
    )
    assert run.kinds_at()[ev.D2H_COPY] == 1
    assert run.elsewhere() == {}


def test_a_users_numpy_of_a_device_tensor_still_fails_as_on_a_gpu(tmp_path):
    """Only the library's own `.cpu()` changed: `t.numpy()` of a cuda tensor raises on a GPU,
    so it raises under emulation too."""
    path = tmp_path / "snippet.py"
    path.write_text("import torch\nt = torch.ones(2, device='cuda')\nt.numpy()\n")
    record = emulate_script(str(path), [])
    assert "can't convert cuda:0 device type tensor to numpy" in (record["error"] or "")


def test_tqdm_set_postfix_is_a_host_read(tmp_path):
    pytest.importorskip("tqdm")
    run = emulate(
        tmp_path,
        LOSS
        + """
import io
from tqdm import tqdm
pbar = tqdm(range(2), file=io.StringIO())
pbar.set_postfix(loss=loss)  # <-
pbar.set_postfix(lr=0.1)
""",
    )
    assert run.kinds_at()[ev.HOST_READ] >= 1
    assert run.elsewhere() == {}


def test_accelerate_tensorboard_tracker_reads_at_the_log_line(tmp_path):
    pytest.importorskip("accelerate")
    pytest.importorskip("tensorboard")
    run = emulate(
        tmp_path,
        LOSS
        + f"""
from accelerate import Accelerator
accelerator = Accelerator(log_with="tensorboard", project_dir={str(tmp_path)!r})
accelerator.init_trackers("run")
accelerator.log({{"loss": loss}}, step=0)  # <-
accelerator.end_training()
""",
    )
    assert run.kinds_at()[ev.D2H_COPY] == 1


def test_lightning_progress_bar_read_is_put_at_the_self_log_line(tmp_path):
    """The progress bar calls `.item()` on what `self.log(..., prog_bar=True)` stored after the
    step, with only `trainer.fit(...)` of the user's file on the stack; the read belongs to the
    `self.log` line (it used to be a runtime-only read at the fit line). A plain `self.log` (no
    progress bar, no logger) is never read."""
    pytest.importorskip("lightning")
    run = emulate(
        tmp_path,
        """
import lightning as L
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

class Lit(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("loss", loss, prog_bar=True)  # <-
        self.log("quiet", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

data = TensorDataset(torch.randn(12, 4), torch.randint(0, 2, (12,)))
trainer = L.Trainer(max_steps=3, logger=False, enable_checkpointing=False, enable_model_summary=False)
trainer.fit(Lit(), DataLoader(data, batch_size=4))
""",
    )
    assert run.kinds_at()[ev.SCALAR_READ] >= 3
    # Lightning's own set-up reads (step 0, at the fit line) are not the logging calls'.
    later = [e for e in run.events if e["line"] != run.marked and e["kind"] == ev.SCALAR_READ and (e["step"] or 0) > 0]
    assert later == []
