# torchsync-fixture: steps=6 warmup=1
"""A marker on a line that does not sync (the tensor lives on the CPU): must be reported unconfirmed."""
import argparse
import json

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
args = parser.parse_args()
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
host_steps = torch.zeros(())
for _ in range(args.steps):
    loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    host_steps += 1
    n = host_steps.item()  # expect: TSL101
print("RESULT " + json.dumps({"steps": n}))
