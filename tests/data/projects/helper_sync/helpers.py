"""The batch unpacking helper of fn_N4a: the blocking copies happen here, every step."""


def parse_batch(batch):
    x, y = batch
    return x.cuda(), y.cuda()  # expect: TSL301 TSL301


def describe(batch):
    x, y = batch
    return f"{x.shape}"
