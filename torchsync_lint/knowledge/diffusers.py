"""diffusers schedulers: their tables (`sigmas`, `timesteps`, `betas`...) are CPU tensors (built
with torch.from_numpy / torch.linspace in `__init__`), until `set_timesteps(..., device=...)`
moves some of them. `alphas_cumprod` is not listed: `add_noise` and `get_velocity` move it to the
samples' device for good on their first call (DDPMScheduler and DDIMScheduler of
diffusers' main in 2026, read from their source), so where it is depends on what ran before: unknown."""

from __future__ import annotations

SCHEDULER_PACKAGES = ("diffusers.",)
SCHEDULER_WORD = "Scheduler"
HOST_TENSOR_TABLES = frozenset({"sigmas", "timesteps", "alphas", "betas", "final_alpha_cumprod"})
