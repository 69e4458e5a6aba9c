import torch
from helpers import describe, parse_batch


def train(model, loader, opt):
    for batch in loader:
        x, y = parse_batch(batch)
        model(x).sum().backward()
        opt.step()
    print(describe(batch))
