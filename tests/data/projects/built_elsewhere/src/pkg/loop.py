"""fn_N4c: an object whose constructor runs in another module."""
import torch


class TrainLoop:
    def __init__(self, model, opt):
        self.model = model
        self.opt = opt
        self.params = list(self.model.parameters())

    def step(self, x):
        self.model(x).sum().backward()
        sq = 0.0
        for p in self.params:
            sq += (p.grad ** 2).sum().item()  # expect: TSL101
        self.opt.step()
        return sq
