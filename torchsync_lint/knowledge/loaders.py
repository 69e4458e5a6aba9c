"""Data loaders and the iterators that wrap them.

A DataLoader yields CPU tensors until the loop moves them; subclasses and look-alikes of other
libraries behave the same. Wrapper iterators (`tqdm(loader)`, `enumerate(loader)`) yield what
they wrap.
"""

from __future__ import annotations

DATALOADER = "torch.utils.data.DataLoader"
# Classes whose instances are DataLoaders (subclasses in other libraries).
LOADER_CLASSES = frozenset(
    {
        DATALOADER,
        "torch_geometric.loader.DataLoader",
        "torch_geometric.loader.NeighborLoader",
        "torch_geometric.loader.LinkNeighborLoader",
        "torch_geometric.loader.ClusterLoader",
        "torch_geometric.loader.GraphSAINTRandomWalkSampler",
        "monai.data.DataLoader",
    }
)
# The modules tqdm exports its progress bar from (tqdm 4.67: tqdm/__init__, auto, autonotebook,
# std, notebook, rich, asyncio, contrib.telegram...: the same class or a subclass).
TQDM_MODULES = ("tqdm", "tqdm.auto", "tqdm.autonotebook", "tqdm.std", "tqdm.notebook", "tqdm.rich", "tqdm.asyncio")
TQDM_BARS = tuple(f"{m}.tqdm" for m in TQDM_MODULES)
TQDM_RANGES = tuple(f"{m}.trange" for m in TQDM_MODULES)
# Calls that yield the items of their first argument (`tqdm(loader)`).
ITEM_WRAPPERS = frozenset({*TQDM_BARS, "rich.progress.track", "itertools.islice", "itertools.cycle"})
# Builtins with the same behaviour (`enumerate` and `zip` shape their items: see calls.py).
BUILTIN_WRAPPERS = frozenset({"iter", "reversed"})
