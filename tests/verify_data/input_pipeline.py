# torchsync-fixture: steps=6 warmup=1
"""Input-pipeline hazards: main-process loading, pageable memory, blocking and host-normalised copies."""
import argparse
import json

import torch
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (n, 3, 8, 8), dtype=torch.uint8, generator=g)
        self.labels = torch.randint(0, 4, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        image = self.images[i].float() / 255.0  # expect: TSL304
        return image, self.labels[i]


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
args = parser.parse_args()
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 4)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(Images(8 * args.steps), batch_size=8)  # expect: TSL302, TSL303
for images, labels in loader:
    images = images.to(device)  # expect: TSL301, TSL304
    labels = labels.to(device, non_blocking=True)  # expect: TSL302
    scale = torch.tensor(2.0, device=device)  # expect: TSL305
    loss = torch.nn.functional.cross_entropy(model(images) * scale, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("RESULT " + json.dumps({"loss": loss.item()}))
