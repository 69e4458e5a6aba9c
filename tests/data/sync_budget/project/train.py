"""A small training script spread over modules, as projects write them (tests/test_verify_budget.py).

train.py builds everything from its arguments; engine.py runs the loop; step_helpers.py is
the per-step helper the sync-budget tests edit (changes/ holds its second versions).
"""
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics.classification import MulticlassAccuracy

import engine

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=100)
parser.add_argument("--log-every", type=int, default=4)
parser.add_argument("--log-dir", default=None)
args = parser.parse_args()

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
features = torch.randn(16 * 8, 12)
labels = torch.randint(0, 4, (16 * 8,))
loader = DataLoader(TensorDataset(features, labels), batch_size=8, shuffle=True, pin_memory=True)
model = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
writer = None
if args.log_dir:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(args.log_dir)
context = engine.Context(
    device=device,
    log_every=args.log_every,
    accuracy=MulticlassAccuracy(num_classes=4, average="macro").to(device),
    writer=writer,
)
try:
    for epoch in range(args.epochs):
        engine.train_one_epoch(model, loader, optimizer, context)
finally:
    if writer is not None:
        writer.close()
