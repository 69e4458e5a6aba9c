# A tour of Python syntax for the walk and position tests (not a training script).
import os, sys as system
from collections import (
    OrderedDict as OD,  # comment inside parens
    defaultdict,
)
from . import sibling  # relative
from .. import parent as p


@decorator
@decorator.with_args(1, key="v")
class Thing(Base, metaclass=Meta):
    """Doc."""

    attr: int = 3

    @property
    def value(self, a, /, b, *args, c=1, d: "int" = 2, **kwargs) -> dict[str, int]:
        return {k: v for k, v in kwargs.items() if k != "x"}

    async def run(self, *, key):
        async with ctx() as (a, b), other() as c:
            async for item in stream():
                await item
        return [x async for x in agen()]


def gen(n):
    total = 0
    while (chunk := read(n)) is not None:
        total += len(chunk); yield chunk
    else:
        yield from ()
    lam = lambda a, b=2, *c, d, **e: (a, b, c, d, e)
    s = f"{total!r:>{n}} {lam=} {'nested' + f'{n:{n}}'}"
    t = s[1:2, ::3, ...]
    u = -total ** 2 if not total else ~total
    v = (1 if total else 2) or [*s, *t] and {**{}, "k": 1}
    w = {1, 2} | {3}
    return u, v, w


try:
    pass
except* (ValueError, TypeError) as group:
    raise RuntimeError("x") from group
else:
    pass
finally:
    del os

try:
    pass
except ValueError:
    pass

match command.split():
    case [action, *rest] if action in ("go", "run"):
        print(action, rest)
    case {"key": value, **others}:
        pass
    case Point(x=0, y=y) | Point(x=y, y=0):
        pass
    case _:
        pass

for i, (j, k) in enumerate(zip(a, b)):
    if i: continue
    elif j:
        break
    else:
        global g
x = y = z = 1; assert x, "message"
print(*args, sep="", **kw)
with open("f") as f: data = f.read()
