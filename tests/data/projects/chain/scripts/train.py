import torch
from trainer.data import build, build_cpu_only
from trainer.fit import fit


def main(ds, workers):
    device = torch.device("cuda")
    model = torch.nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    fit(model, build(ds, workers), opt, device, 3)
    for x, y in build_cpu_only(ds):
        print(x.sum())
