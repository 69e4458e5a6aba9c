from trainer.steps import one_epoch


def fit(model, loader, opt, device, epochs):
    for epoch in range(epochs):
        one_epoch(model, loader, opt, device)
