import torch

from .loop import TrainLoop


def main(loader):
    model = torch.nn.Linear(8, 2).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loop = TrainLoop(model, opt)
    for x in loader:
        loop.step(x.cuda(non_blocking=True))
