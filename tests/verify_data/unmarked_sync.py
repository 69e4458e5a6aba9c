# torchsync-fixture: steps=6 warmup=1
"""No markers, but it syncs every step (inside clip_grad_norm_, which the linter cannot see):
a clean fixture that is not clean."""
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
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
print("RESULT " + json.dumps({"loss": float(loss)}))
