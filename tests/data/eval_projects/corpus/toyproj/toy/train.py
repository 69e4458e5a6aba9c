import torch
from torch import nn
from torch.utils.data import DataLoader

from toy.data import make_dataset, make_loader
from toy.engine import train_one_epoch


def warmup(model, criterion, optimizer, device):
    loader = DataLoader(make_dataset(64), batch_size=16, num_workers=2, pin_memory=True)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print("warmup loss", loss.item())
        if torch.isnan(loss):
            break


def main():
    device = torch.device("cuda")
    model = nn.Linear(8, 4).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    warmup(model, criterion, optimizer, device)
    loader = make_loader()
    for epoch in range(3):
        avg = train_one_epoch(model, loader, criterion, optimizer, device)
        print(f"epoch {epoch}: {avg:.3f}")


if __name__ == "__main__":
    main()
