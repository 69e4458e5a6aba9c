"""Per-step bookkeeping: accumulate on the device, read it on the host every few steps."""


def after_step(context, loss, logits, labels):
    context.running = loss if context.running is None else context.running + loss
    if context.step % context.log_every == 0:
        print(f"step {context.step}: mean loss {context.running.item() / context.step:.4f}")
