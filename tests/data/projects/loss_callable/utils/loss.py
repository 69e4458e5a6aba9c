"""fn_N4b's per-call class, called from train.py's loop (yolov5's ComputeLoss pattern)."""
import torch


class ComputeLoss:
    def __init__(self, model):
        self.model = model

    def __call__(self, pred, targets):
        keep = targets[:, 4] > 0.5
        kept = targets[keep]  # expect: TSL105
        return (pred.sum() - kept.sum()).abs()


class Unused:
    def __call__(self, pred, targets):
        keep = targets[:, 4] > 0.5
        return targets[keep]
