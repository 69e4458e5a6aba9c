# torchsync-fixture: steps=6 warmup=1
"""No hazards: pinned multi-worker loading, non-blocking copies, on-device accumulation,
sync-free metrics, one host read after the loop."""
import argparse
import json

import torch
import torchmetrics
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics.classification import MulticlassAccuracy

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
args = parser.parse_args()
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = TensorDataset(torch.randint(0, 256, (8 * args.steps, 8), dtype=torch.uint8), torch.randint(0, 4, (8 * args.steps,)))
loader = DataLoader(data, batch_size=8, num_workers=2, pin_memory=True)
model = torch.nn.Linear(8, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
mean_loss = torchmetrics.MeanMetric(nan_strategy="disable").to(device)
accuracy = MulticlassAccuracy(num_classes=4, average="micro", validate_args=False).to(device)
total = torch.zeros((), device=device)
host_counter = torch.zeros(())
for features, labels in loader:
    features = features.to(device, non_blocking=True).float().div_(255)
    labels = labels.to(device, non_blocking=True)
    logits = model(features)
    loss = torch.nn.functional.cross_entropy(logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    total += loss.detach()
    mean_loss.update(loss.detach())
    accuracy.update(logits, labels)
    host_counter += 1
    seen = host_counter.item()  # a CPU tensor: no device, no sync
print("RESULT " + json.dumps({"loss": total.item() / args.steps, "mean": mean_loss.compute().item()}))
