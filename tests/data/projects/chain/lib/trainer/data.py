from torch.utils.data import DataLoader


def build(ds, workers):
    return DataLoader(ds, batch_size=16, num_workers=workers)  # expect: TSL302


def build_cpu_only(ds):
    return DataLoader(ds, batch_size=16)
