"""TSL106: device tensors handed to logging libraries in hot (per-step) loops.

A TSL1xx rule kept out of host_sync.py for size. It asks three questions: is this call a
logging sink and which arguments does it read on the host (``analysis.sinks``, which reads the
table in ``knowledge/logging_sinks.py``), is an argument a device tensor (``is_device``), and
does the call run every training step (``self.hot``)?
"""

from __future__ import annotations

import libcst as cst

from torchsync_lint.analysis.sinks import SinkAnalysis
from torchsync_lint.rule import Rule
from torchsync_lint.rules._cases import LOOP_BODY_LINE as L
from torchsync_lint.rules._cases import in_loop
from torchsync_lint.types import Invalid, Valid


def _with(setup: str, body: str, after: str = "", imports: str = "") -> str:
    """A training loop with ``imports`` after `import torch`, ``setup`` just before the loop,
    ``body`` at the end of the loop body and ``after`` it. Adds lines before the loop: see _line."""
    code = in_loop(body, after=after)
    if setup:
        code = code.replace("for step, (x, y)", f"{setup}\nfor step, (x, y)", 1)
    if imports:
        code = code.replace("import torch\n", f"import torch\n{imports}\n", 1)
    return code


def _line(setup: str = "", imports: str = "", offset: int = 0) -> int:
    """The line of the body's line ``offset`` in ``_with(setup, ..., imports=imports)``."""
    return L + offset + (setup.count("\n") + 1 if setup else 0) + (imports.count("\n") + 1 if imports else 0)


_TB = "from torch.utils.tensorboard import SummaryWriter"
_WRITER = "writer = SummaryWriter()"
_LIT = """\
import lightning as L
import torch
import torch.nn.functional as F
from torchmetrics.classification import MulticlassAccuracy


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 4)
        self.acc = MulticlassAccuracy(num_classes=4)

    def {hook}(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        loss = F.cross_entropy(logits, y)
        {line}
        return loss
"""
_LIT_LINE = 17
_NO_LOGGER = "\n\nL.Trainer(max_steps=5, logger=False).fit(Classifier())\n"


def _lit(line: str, hook: str = "training_step") -> str:
    return _LIT.format(line=line, hook=hook)


class TensorLoggedInLoop(Rule):
    """
    ## What it does
    Flags a device tensor (or a dict holding one) handed to a logger that reads it on the host,
    in a per-step loop: `add_scalar`, `wandb.log`, `accelerator.log`, `self.log(..., prog_bar=True)`.

    The sinks and where each one reads the value (checked in each library's source):

    | call | the library reads it with |
    |---|---|
    | `SummaryWriter(...).add_scalar` / `add_scalars` / `add_histogram` (`torch.utils.tensorboard`, `tensorboardX`) | `make_np`: `.detach().cpu().numpy()` |
    | `wandb.log(...)`, `wandb.init(...).log(...)` | `json_friendly`: `.item()` |
    | `Accelerator(log_with=...).log(...)` | its trackers: `.cpu()` / `.tolist()` |
    | `self.log(..., prog_bar=True)` / `self.log_dict` in a LightningModule training hook | the progress bar: `.item()` after every step |
    | `self.log(..., on_step=True)` in a validation or test hook | the logger connector: `.item()` after every evaluation step |
    | `Fabric(...).log(...)` / `log_dict(...)` | `convert_tensors_to_scalars`: `.item()` |
    | `tqdm(...).set_postfix(...)` | `str(value)` |
    | `mlflow.log_metric` / `log_metrics`, `MlflowClient().log_metric` | `.cpu()`, `float()` |
    | comet `Experiment(...).log_metric(s)`, neptune `run[key].append`, ClearML `report_scalar` | `.item()` / `float()` |

    Lightning's `self.log(name, tensor)` without `prog_bar=True` in a training hook is
    reported as gated: the logger converts it every `log_every_n_steps` (50 by default), a
    sync once per interval rather than per step. Not flagged, because the library does not
    read the value while training: `on_step=False` (reduced on the device and read once per
    epoch), a torchmetrics `Metric` object without `prog_bar=True` (computed at epoch end),
    and `accelerator.log` on an `Accelerator` made without `log_with` (it has no trackers). A device `Metric` whose forward runs in the hook (`self.acc(preds, y)`) and is
    logged with `prog_bar=True` is flagged: the progress bar shows its batch value, read with
    `.item()` after every step.

    ## Why is this bad?
    The logging call looks free, but the library turns the tensor into a Python number or a
    numpy array inside the call (or, for Lightning, right after the step), which copies it to
    the host and waits for every queued kernel: one full CPU-GPU sync per logged tensor per
    step, the same as calling `.item()` yourself. A step-interval gate (`if step % 100 == 0:`)
    makes it rare; the message says when the call is gated.

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        writer.add_scalar("train/loss", loss, step)
        wandb.log({"loss": loss})
    ```

    ## Use instead
    Log every N steps, or accumulate on the device and log once:
    ```python
    running = torch.zeros((), device=device)
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        running += loss.detach()          # stays on the device
        if (step + 1) % 100 == 0:         # one sync per 100 steps
            mean = (running / 100).item()
            writer.add_scalar("train/loss", mean, step)
            wandb.log({"loss": mean})
            running.zero_()
    ```
    In a LightningModule, drop `prog_bar=True` (the logger reads the value every
    `log_every_n_steps`) or log with `on_step=False, on_epoch=True`.

    ## Fix safety
    There is no automatic fix: the logged value would change type (a tensor becomes a float)
    and the cure (an interval, an accumulator) is a choice about what to log.
    """

    code = "TSL106"
    name = "tensor-logged-in-loop"
    message = "`{expr}` is a device tensor handed to `{sink}`, and {where}: the host waits for the GPU every step; log every N steps, or accumulate on the device and log once"

    VALID = [
        Valid(_with(_WRITER, "writer.add_scalar('loss', 0.5 * step, step)", imports=_TB)),  # a host float
        Valid(_with(_WRITER, "if step % 100 == 0:\n    writer.add_scalar('loss', loss.item(), step)", imports=_TB)),  # already a host number
        Valid(_with(_WRITER, "pass", after="writer.add_scalar('final/loss', loss, 0)\n", imports=_TB)),  # once, after the loop
        Valid(_with(_WRITER, "t = torch.zeros(())\nwriter.add_scalar('cpu', t, step)", imports=_TB)),  # a CPU tensor
        Valid(_with(_WRITER, "writer.add_scalar('w', np.mean([0.1, 0.2]), step)", imports=_TB + "\nimport numpy as np")),  # a numpy value
        Valid(_with("tracker = make_tracker()", "tracker.log({'loss': loss})")),  # not a known sink: silent
        Valid(_with("accelerator = Accelerator()", "accelerator.log({'loss': loss})", imports="from accelerate import Accelerator")),  # no trackers
        Valid(_with("pbar = tqdm(range(10))", "pbar.set_postfix(lr=optimizer.param_groups[0]['lr'], refresh=False)", imports="from tqdm import tqdm")),
        Valid(_lit("self.log('train/acc', self.acc)")),  # a torchmetrics Metric: computed at epoch end
        Valid(_lit("self.acc.update(logits, y)\n        self.log('train/acc', self.acc, prog_bar=True)")),  # no forward: no batch value to show
        Valid(_lit("self.log('train/loss', loss, prog_bar=True, on_step=False, on_epoch=True)")),  # per epoch
        Valid(_lit("self.log('train/loss', loss, prog_bar=show_loss)")),  # not a literal: unknown
        Valid(_lit("self.log('val/loss', loss, prog_bar=True)", hook="validation_step")),  # on_step defaults to False there
        Valid(_lit("self.log('train/loss', loss.item(), prog_bar=True)")),  # a host float
        Valid(_lit("self.log('loss', loss, prog_bar=True)").replace("(L.LightningModule)", "(torch.nn.Module)")),  # not Lightning
        Valid(_lit("self.log('train/loss', loss)") + _NO_LOGGER),  # every Trainer here has no logger: nothing reads it
        Valid(_lit("self.log('train/loss', loss)") + "\nL.Trainer(logger=[]).fit(Classifier())\n"),  # an empty list of loggers
        Valid(_lit("self.log('train/loss', loss)") + "\nuse_logger = False\nL.Trainer(logger=use_logger).fit(Classifier())\n"),  # through a name
        # the user configures whether there is a logger: unknown, silent
        Valid(_lit("self.log('train/loss', loss)") + "\nCFG = json.load(open('cfg.json'))\nL.Trainer(logger=CFG['logger']).fit(Classifier())\n"),
        Valid(_lit("self.log('train/loss', loss)") + "\nL.Trainer(**trainer_kwargs).fit(Classifier())\n"),
    ]
    INVALID = [
        Invalid(_with(_WRITER, "writer.add_scalar('train/loss', loss, step)", imports=_TB), line=_line(_WRITER, _TB), message_contains="make_np"),
        Invalid(_with(_WRITER, "writer.add_scalars('train', {'loss': loss, 'lr': 0.1}, step)", imports=_TB), line=_line(_WRITER, _TB)),
        Invalid(
            _with("writer = SW('runs')", "if step % 100 == 0:\n    writer.add_histogram('logits', logits, step)", imports="from torch.utils.tensorboard import SummaryWriter as SW"),
            line=_line("writer = SW('runs')", "x", offset=1),
            message_contains="gated",
        ),
        Invalid(_with("writer = SummaryWriter()", "writer.add_scalar('loss', loss, step)", imports="from tensorboardX import SummaryWriter"), line=_line("x", "x")),
        Invalid(_with("", "wandb.log({'loss': loss, 'step': step})", imports="import wandb"), line=_line(imports="x"), message_contains="`loss`"),
        Invalid(_with("run = wandb.init(project='p')", "run.log({'loss': loss})", imports="import wandb"), line=_line("x", "x")),
        Invalid(
            _with("accelerator = Accelerator(log_with='tensorboard')", "accelerator.log({'train_loss': loss}, step=step)", imports="from accelerate import Accelerator"),
            line=_line("x", "x"),
            message_contains="trackers",
        ),
        Invalid(_with("fabric = L.Fabric()", "fabric.log('loss', loss)", imports="import lightning as L"), line=_line("x", "x")),
        Invalid(_with("fabric = Fabric()", "fabric.log_dict({'loss': loss})", imports="from lightning.fabric import Fabric"), line=_line("x", "x")),
        Invalid(_with("pbar = tqdm(range(10))", "pbar.set_postfix(loss=loss)", imports="from tqdm.auto import tqdm"), line=_line("x", "x"), message_contains="str()"),
        Invalid(_with("", "mlflow.log_metric('loss', loss, step=step)", imports="import mlflow"), line=_line(imports="x")),
        Invalid(_with("exp = comet_ml.Experiment()", "exp.log_metrics({'loss': loss})", imports="import comet_ml"), line=_line("x", "x")),
        Invalid(_with("run = neptune.init_run()", "run['train/loss'].append(loss)", imports="import neptune"), line=_line("x", "x")),
        Invalid(_with("task = Task.init(project_name='p')\nlog = task.get_logger()", "log.report_scalar('loss', 'train', loss, step)", imports="from clearml import Task"), line=_line("x\nx", "x")),
        Invalid(_lit("self.log('train/loss', loss, prog_bar=True)"), line=_LIT_LINE, message_contains="progress bar"),
        # without the progress bar the logger reads it every `log_every_n_steps`: gated, and said so
        Invalid(_lit("self.log('train/loss', loss)"), line=_LIT_LINE, message_contains="log_every_n_steps"),
        Invalid(_lit("self.log_dict({'loss': loss}, prog_bar=False, logger=True, on_step=True)"), line=_LIT_LINE, message_contains="gated"),
        # one of the Trainers keeps the default logger
        Invalid(_lit("self.log('train/loss', loss)") + _NO_LOGGER + "L.Trainer(max_steps=5).fit(Classifier())\n", line=_LIT_LINE, message_contains="gated"),
        Invalid(_lit("self.log('train/loss', loss, prog_bar=True)") + _NO_LOGGER, line=_LIT_LINE, message_contains="progress bar"),
        # a logger object, directly, through a name, in a list
        Invalid(_lit("self.log('train/loss', loss)") + "\nL.Trainer(logger=L.pytorch.loggers.CSVLogger('logs')).fit(Classifier())\n", line=_LIT_LINE, message_contains="gated"),
        Invalid(_lit("self.log('train/loss', loss)") + "\nfrom lightning.pytorch.loggers import TensorBoardLogger\ntb = TensorBoardLogger('runs')\nL.Trainer(logger=tb).fit(Classifier())\n", line=_LIT_LINE, message_contains="gated"),
        Invalid(_lit("self.log('train/loss', loss)") + "\nfrom pytorch_lightning.loggers import WandbLogger\nL.Trainer(logger=[WandbLogger()]).fit(Classifier())\n", line=_LIT_LINE, message_contains="gated"),
        Invalid(_lit("self.log_dict({'loss': loss, 'acc': self.acc}, prog_bar=True)"), line=_LIT_LINE),
        Invalid(_lit("self.log('val/loss', loss, on_step=True)", hook="validation_step"), line=_LIT_LINE, message_contains="evaluation step"),
        # the metric's forward value for this batch goes to the progress bar every step
        Invalid(_lit("self.acc(logits, y)\n        self.log('train/acc', self.acc, prog_bar=True)"), line=_LIT_LINE + 1, message_contains="self.acc"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        reads = self.analysis.extension("sinks", SinkAnalysis).host_reads(node)
        on_device = [r for r in reads if r.device_value or self.analysis.values.holds_device(r.expr)]  # (a dict of tensors: each read)
        if not on_device:
            return
        hot = self.hot(node)
        if hot is None:
            return  # logged once, outside the per-step path
        expr = ", ".join(dict.fromkeys(self.snippet(r.expr, 30) for r in on_device))
        message = self.message + (f" ({on_device[0].gate})" if on_device[0].gate and not hot.gated else "")
        self.report(node, message, expr=expr, sink=self.snippet(node.func, 40), where=on_device[0].where, hot=hot)
