"""Logging sinks: library calls that read the tensors they are handed on the host.

Each row says how the sink is recognised, which of its arguments it reads on the host, and
where the library does the read (for messages and docs). Adding a sink is adding a row; rules
never read this table, they ask ``torchsync_lint.analysis.sinks``.

A sink is recognised either as a qualified function (``wandb.log``) or as a method of an
object made by a known call (``SummaryWriter(...).add_scalar``), possibly through argument-
less getters and subscripts in between (``Task.init(...).get_logger().report_scalar``:
``via=("get_logger",)``; ``neptune.init_run(...)["train/loss"].append``: ``via=("[]",)``).

Every row was checked against the installed source of the library (versions below): the
comment on each row names the function that does the read.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchsync_lint.knowledge.loaders import TQDM_BARS, TQDM_RANGES


@dataclass(frozen=True)
class Reads:
    """One argument the sink reads on the host, by 0-based position and/or keyword.

    ``container``: the argument is a dict/list/tuple whose values the sink reads (a dict's
    keys are names); the rule looks at each value of a literal, or at the whole argument.
    """

    position: int | None
    keyword: str | None
    container: bool = False


@dataclass(frozen=True)
class Sink:
    library: str
    where: str  # where the library reads the value: one short clause for the message
    reads: tuple[Reads, ...]
    functions: tuple[str, ...] = ()  # qualified functions: "wandb.log"
    makers: tuple[str, ...] = ()  # or: the qualified calls that make the receiver...
    via: tuple[str, ...] = ()  # ...then these argument-less getters / "[]" subscripts...
    methods: tuple[str, ...] = ()  # ...and these methods of it
    other_keywords: bool = False  # every other keyword argument is read too (`**kwargs` sinks)
    ignore_keywords: frozenset[str] = frozenset()  # keywords that are options, not values
    maker_keyword: str | None = None  # the maker call must pass this keyword (not `None`)


_TENSORBOARD = ("torch.utils.tensorboard.SummaryWriter", "torch.utils.tensorboard.writer.SummaryWriter")
_TENSORBOARD_X = ("tensorboardX.SummaryWriter", "tensorboardX.writer.SummaryWriter")
# torch/utils/tensorboard/_convert_np.py (torch 2.13): make_np -> _prepare_pytorch ->
# `x.detach().cpu().numpy()`, called by summary.scalar/histogram inside add_scalar(s)/add_histogram.
_TB_WHERE = "tensorboard's `make_np` calls `.detach().cpu().numpy()` on it"
# tensorboardX/x2num.py (2.6.5): make_np -> prepare_pytorch -> `x.cpu().numpy()`.
_TBX_WHERE = "tensorboardX's `make_np` calls `.cpu().numpy()` on it"
_FABRIC = ("lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric")
_TQDM = (*TQDM_BARS, *TQDM_RANGES)
_MLFLOW_CLIENT = ("mlflow.MlflowClient", "mlflow.tracking.MlflowClient", "mlflow.client.MlflowClient")
_COMET = ("comet_ml.Experiment", "comet_ml.OfflineExperiment", "comet_ml.ExistingExperiment", "comet_ml.start")

SINKS: tuple[Sink, ...] = (
    Sink("tensorboard", _TB_WHERE, (Reads(1, "scalar_value"),), makers=_TENSORBOARD, methods=("add_scalar",)),
    Sink("tensorboard", _TB_WHERE, (Reads(1, "tag_scalar_dict", container=True),), makers=_TENSORBOARD, methods=("add_scalars",)),
    Sink("tensorboard", _TB_WHERE, (Reads(1, "values"),), makers=_TENSORBOARD, methods=("add_histogram",)),
    Sink("tensorboardX", _TBX_WHERE, (Reads(1, "scalar_value"),), makers=_TENSORBOARD_X, methods=("add_scalar",)),
    Sink("tensorboardX", _TBX_WHERE, (Reads(1, "tag_scalar_dict", container=True),), makers=_TENSORBOARD_X, methods=("add_scalars",)),
    Sink("tensorboardX", _TBX_WHERE, (Reads(1, "values"),), makers=_TENSORBOARD_X, methods=("add_histogram",)),
    # wandb/sdk/interface/interface.py (0.31): publish_partial_history -> history_dict_to_json ->
    # val_to_json -> util.json_friendly: `.item()` of a 0-dim tensor, else `.cpu().detach().numpy()`,
    # inside the `log` call (nested dicts too).
    Sink("wandb", "wandb calls `.item()` on it", (Reads(0, "data", container=True),), functions=("wandb.log", "wandb.run.log")),
    Sink("wandb", "wandb calls `.item()` on it", (Reads(0, "data", container=True),), makers=("wandb.init",), methods=("log",)),
    # accelerate/accelerator.py (1.15): Accelerator.log -> each tracker's log; TensorBoardTracker.log
    # -> utils.operations.listify: `.detach().cpu()` then `.tolist()`; WandBTracker -> wandb run.log.
    # Without `log_with` there are no trackers and `log` does nothing.
    Sink(
        "accelerate", "its trackers call `.cpu()` on it", (Reads(0, "values", container=True),),
        makers=("accelerate.Accelerator",), methods=("log",), maker_keyword="log_with",
    ),
    # lightning/fabric/fabric.py (2.6): log_dict -> convert_tensors_to_scalars -> `.item()`,
    # before it looks at any logger; `log(name, value)` is `log_dict({name: value})`.
    Sink("Fabric", "Fabric calls `.item()` on it", (Reads(1, "value"),), makers=_FABRIC, methods=("log",)),
    Sink("Fabric", "Fabric calls `.item()` on it", (Reads(0, "metrics", container=True),), makers=_FABRIC, methods=("log_dict",)),
    # tqdm/std.py (4.70): set_postfix formats numbers.Number values and calls `str(value)` on
    # anything else: a tensor's repr reads every element.
    Sink(
        "tqdm", "tqdm calls `str()` on it", (Reads(0, "ordered_dict", container=True),),
        makers=_TQDM, methods=("set_postfix",), other_keywords=True, ignore_keywords=frozenset({"refresh"}),
    ),
    # mlflow/tracking/metric_value_conversion_utils.py (mlflow-skinny 3.17):
    # convert_metric_value_to_float_if_torch_tensor: `.detach().cpu()` then `float(.item())`,
    # from the client's log_metric / log_batch (fluent log_metric and log_metrics).
    Sink("mlflow", "MLflow calls `.cpu()` and `float()` on it", (Reads(1, "value"),), functions=("mlflow.log_metric",)),
    Sink("mlflow", "MLflow calls `.cpu()` and `float()` on it", (Reads(0, "metrics", container=True),), functions=("mlflow.log_metrics",)),
    Sink("mlflow", "MLflow calls `.cpu()` and `float()` on it", (Reads(2, "value"),), makers=_MLFLOW_CLIENT, methods=("log_metric",)),
    # comet_ml/convert_utils.py (3.58): convert_to_scalar: `.numpy()` (raises for a GPU tensor,
    # caught) then `.item()`; log_metrics flattens the dict and logs each value the same way.
    Sink("comet_ml", "Comet calls `.item()` on it", (Reads(1, "value"),), makers=_COMET, methods=("log_metric",)),
    Sink("comet_ml", "Comet calls `.item()` on it", (Reads(0, "dic", container=True),), makers=_COMET, methods=("log_metrics",)),
    # neptune/handler.py (1.14): append -> extend -> FloatSeries: `float(value)`
    # (neptune/internal/utils is_float_like, neptune/types/series/float_series.py).
    Sink("neptune", "Neptune calls `float()` on it", (Reads(0, "value"),), makers=("neptune.init_run", "neptune.Run"), via=("[]",), methods=("append",)),
    # clearml/logger.py (2.1): report_scalar passes `float(value)` to the reporter.
    Sink("clearml", "ClearML calls `float()` on it", (Reads(2, "value"),), makers=("clearml.Logger.current_logger",), methods=("report_scalar",)),
    Sink(
        "clearml", "ClearML calls `float()` on it", (Reads(2, "value"),),
        makers=("clearml.Task.init", "clearml.Task.current_task"), via=("get_logger",), methods=("report_scalar",),
    ),
)


@dataclass(frozen=True)
class LightningHook:
    """A LightningModule hook that may `self.log` per step, with Lightning's default `on_step`
    (lightning/pytorch/trainer/connectors/logger_connector/fx_validator.py, 2.6)."""

    default_on_step: bool
    training: bool  # a training-loop hook (else an evaluation-loop one)


# `self.log(name, value, prog_bar=False, logger=None, on_step=None, ...)` and
# `self.log_dict(dictionary, prog_bar=False, logger=None, on_step=None, ...)` store the tensor;
# Lightning reads it later (lightning/pytorch/core/module.py and
# trainer/connectors/logger_connector/, 2.6):
# - training hooks: the progress bar's on_train_batch_end -> trainer.progress_bar_metrics ->
#   _ResultCollection.metrics -> convert_tensors_to_scalars (`.item()`) of every `prog_bar=True`
#   value, every `refresh_rate` (default 1) steps: per step. Logger values are converted in
#   update_train_step_metrics only when should_update_logs (every `log_every_n_steps`,
#   default 50): gated by Lightning, reported as gated. `log_metrics` returns before any
#   conversion when the trainer has no loggers (`Trainer(logger=False)`).
# - evaluation hooks (`on_step` defaults to False): with `on_step=True`, update_eval_step_metrics
#   converts the logger values (and the progress-bar ones) on every evaluation step.
# - `on_step=False` values are reduced on the device and read once per epoch; a torchmetrics
#   Metric object is computed at epoch end, but its `_forward_cache` (the batch value of a
#   forward call in the step) is converted like a tensor: per step with `prog_bar=True`.
LIGHTNING_LOG_METHODS: dict[str, Reads] = {"log": Reads(1, "value"), "log_dict": Reads(0, "dictionary", container=True)}
LIGHTNING_TRAINING_WHERE = "Lightning's progress bar calls `.item()` on it after every step (`prog_bar=True`)"
LIGHTNING_LOGGER_WHERE = "Lightning's logger calls `.item()` on it"
# Without `prog_bar`, a training-step value reaches the logger every `log_every_n_steps` only.
LIGHTNING_LOGGER_GATE = "gated by Lightning's `log_every_n_steps` (50 by default); it still syncs on those steps"
LIGHTNING_EVALUATION_WHERE = "Lightning's logger calls `.item()` on it after every evaluation step (`on_step=True`)"
LIGHTNING_HOOKS: dict[str, LightningHook] = {
    **{name: LightningHook(True, True) for name in (
        "training_step", "on_train_batch_start", "on_train_batch_end", "on_before_backward", "backward",
        "on_after_backward", "on_before_optimizer_step", "optimizer_step", "configure_gradient_clipping",
        "clip_gradients", "on_before_zero_grad", "optimizer_zero_grad",
    )},
    **{name: LightningHook(False, False) for name in (
        "validation_step", "test_step", "on_validation_batch_start", "on_validation_batch_end",
        "on_test_batch_start", "on_test_batch_end",
    )},
}
