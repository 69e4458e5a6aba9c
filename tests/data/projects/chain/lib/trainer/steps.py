import torch


def one_epoch(model, loader, opt, device):
    for x, y in loader:
        x = x.to(device)  # expect: TSL301
        y = y.to(device, non_blocking=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        log_loss(loss)


def log_loss(value):
    print(f"loss {value}")  # expect: TSL103
