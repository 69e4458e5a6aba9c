class AverageMeter:
    def __init__(self):
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.total += value.item() * n
        self.count += n

    @property
    def avg(self):
        return self.total / max(self.count, 1)
