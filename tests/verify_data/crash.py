# torchsync-fixture: steps=6
"""Crashes in the middle of the loop."""
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
args = parser.parse_args()
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
for step in range(args.steps):
    x = torch.randn(4, device=device)
    if step == 2:
        raise RuntimeError("boom at step 2")
