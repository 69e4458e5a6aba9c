# torchsync-fixture: steps=6 warmup=1
"""torchmetrics collection hazards: the syncs happen inside torchmetrics but belong to these lines."""
import argparse
import json

import torch
import torchmetrics
from torchmetrics.classification import MulticlassAccuracy

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
args = parser.parse_args()
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(8, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
mean_loss = torchmetrics.MeanMetric().to(device)
lr_seen = torchmetrics.MeanMetric(nan_strategy="disable").to(device)
accuracy = MulticlassAccuracy(num_classes=4).to(device)
for step in range(args.steps):
    x = torch.randn(16, 8, device=device)
    y = torch.randint(0, 4, (16,), device=device)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    mean_loss.update(loss)  # expect: TSL201
    lr_seen.update(0.1)  # expect: TSL202
    accuracy.update(logits, y)  # expect: TSL206
print("RESULT " + json.dumps({"loss": mean_loss.compute().item(), "acc": accuracy.compute().item()}))
