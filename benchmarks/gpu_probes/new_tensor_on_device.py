"""GPU probe for the cuda backend's labels (not a fixture: benchmarks/verify_gpu.sh replays it).

`loss.new_tensor(host data)` with no device copies the data to the device of `loss` inside the
C++ constructor, where no op is dispatched: the attribution pass must still name the blocking
copy (`h2d-blocking Tensor.new_tensor`) at this line, as it does for `torch.tensor(...,
device=cuda)`.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(64, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(256, 64, device=device)
y = torch.randint(0, 4, (256,), device=device)

for step in range(12):
    loss = F.cross_entropy(model(x), y)
    weights = loss.new_tensor([0.5, 2.0])  # expect: TSL305
    (loss * weights.mean()).backward()
    optimizer.step()
    optimizer.zero_grad()
