"""A small training loop with host syncs (TSL1xx); used by the integration tests."""
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(8, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
dataset = TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))
loader = DataLoader(dataset, batch_size=16, num_workers=2, pin_memory=True)
running = 0.0
for step, (x, y) in enumerate(loader):
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    running += loss.item()
    if torch.isnan(loss):
        raise RuntimeError("NaN loss")
    print(f"step {step}: loss {loss}")
    torch.cuda.synchronize()
    picked = logits[logits > 0]
    acc = float(
        (logits.argmax(1) == y).float().mean()
    )
    noted = loss.item()  # noqa: TSL101
    kept = loss.item()  # torchsync: ignore[TSL101]
    tag = "é→"; seen = loss.item()
    gap = 0;	val = loss.item()
    preds = logits.argmax(1).cpu().numpy(); last = loss.tolist()
