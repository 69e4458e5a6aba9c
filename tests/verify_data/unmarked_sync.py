# torchsync-fixture: steps=6 warmup=1
"""No markers, but it syncs every step: a clean fixture that is not clean."""
import argparse
import json

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
args = parser.parse_args()
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(args.steps):
    loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    worst = int(loss.detach().max() * 100)
print("RESULT " + json.dumps({"worst": worst}))
