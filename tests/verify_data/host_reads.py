# torchsync-fixture: steps=6 warmup=1
"""Host reads in the hot loop: one per TSL1xx hazard, each marked on its line."""
import argparse
import json

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
args = parser.parse_args()
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(8, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
running = 0.0
for step in range(args.steps):
    x = torch.randn(16, 8, device=device)
    y = torch.randint(0, 4, (16,), device=device)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    running += loss.item()  # expect: TSL101
    if torch.isnan(loss).any():  # expect: TSL102
        break
    print(f"step {step} loss {loss:.4f}")  # expect: TSL103
    torch.cuda.synchronize()  # expect: TSL104
    positive = logits[logits > 0]  # expect: TSL105
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)  # expect-sync: isnan check inside torch
print("RESULT " + json.dumps({"loss": running / args.steps}))
