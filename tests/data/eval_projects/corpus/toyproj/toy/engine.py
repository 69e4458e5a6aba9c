import numpy as np

from toy.meters import AverageMeter


def train_one_epoch(model, loader, criterion, optimizer, device):
    model.train()
    meter = AverageMeter()
    for images, targets in loader:
        images = images.to(device)
        targets = targets.to(device)
        loss = criterion(model(images), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        meter.update(loss.detach(), images.size(0))
        ratio = np.float32(0.5).item()
    return meter.avg
