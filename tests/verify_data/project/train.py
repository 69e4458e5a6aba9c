"""A training script as projects write them: argparse, a src/ package, tensorboard logging,
a look at the device, AMP. Far more steps than a test can wait for (--epochs): verify's step
clock stops it. Its two per-step host reads are marked."""
import argparse

import torch
import torch.nn.functional as F

from toyproj.data import make_loader, read_shape
from toyproj.model import build_model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--data", required=True, help="the data set's shape file")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--log-dir", default=None, help="tensorboard logs (off when not given)")
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--show-device", action="store_true")
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.show_device and device.type == "cuda":
        props = torch.cuda.get_device_properties(0)
        print(f"training on {props.name} ({props.total_memory / 2**30:.1f} GiB)")
    _, features, classes = read_shape(args.data)
    loader = make_loader(args.data, args.batch_size)
    model = build_model(features, classes).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device.type, enabled=args.amp)
    writer = None
    if args.log_dir:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(args.log_dir)
    step = 0
    try:
        for epoch in range(args.epochs):
            for inputs, targets in loader:
                inputs = inputs.to(device, non_blocking=True)
                targets = targets.to(device, non_blocking=True)
                with torch.autocast(device.type, enabled=args.amp):
                    loss = F.cross_entropy(model(inputs), targets)
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                value = loss.item()  # expect: TSL101
                if writer is not None:
                    writer.add_scalar("train/loss", value, step)
                if torch.isnan(loss):  # expect: TSL102
                    raise FloatingPointError(f"loss is NaN at epoch {epoch}")
                step += 1
    finally:
        if writer is not None:
            writer.close()
    print(f"trained {step} steps")


if __name__ == "__main__":
    main()
