"""diffusers schedulers: their tables (`sigmas`, `timesteps`, `alphas_cumprod`...) are CPU
tensors (built with torch.from_numpy / torch.linspace in `__init__`), until `set_timesteps(...,
device=...)` moves some of them."""

from __future__ import annotations

SCHEDULER_PACKAGES = ("diffusers.",)
SCHEDULER_WORD = "Scheduler"
HOST_TENSOR_TABLES = frozenset({"sigmas", "timesteps", "alphas_cumprod", "alphas", "betas", "final_alpha_cumprod"})
