import torch
from utils.loss import ComputeLoss


def main(model, loader, opt):
    compute_loss = ComputeLoss(model)
    for x, t in loader:
        loss = compute_loss(model(x.cuda(non_blocking=True)), t.cuda(non_blocking=True))
        loss.backward()
        opt.step()
