"""What a verification ran on: device, torch, CUDA and torchmetrics versions.

Results on a GPU are only comparable with the device and versions beside them, so the
markdown report starts with this. torch is imported in a child process, like everything
else the verifier runs, so that `torchsync_lint.verify` itself stays free of torch.
"""

from __future__ import annotations

import datetime
import json
import platform
import subprocess
import sys

from torchsync_lint import __version__

_PROBE = r"""
import importlib.metadata as md, json, platform
import torch
def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None
cuda = torch.cuda.is_available()
print(json.dumps({
    "torch": torch.__version__,
    "cuda_runtime": torch.version.cuda,
    "gpu": torch.cuda.get_device_name(0) if cuda else None,
    "gpu_count": torch.cuda.device_count() if cuda else 0,
    "torchmetrics": version("torchmetrics"),
    "libcst": version("libcst"),
}))
"""


def collect(backend: str, timeout: float = 120.0) -> dict:
    """The environment of this run; fields the probe could not read are None."""
    env: dict = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "torchsync_lint": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "backend": backend,
        "command": "torchsync-lint " + " ".join(sys.argv[1:]) if sys.argv[1:] else None,
    }
    try:
        probe = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=timeout, check=False)
        env.update(json.loads(probe.stdout.strip().splitlines()[-1]))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        env["probe_error"] = "could not import torch in a child process"
    if "torch" in env and env.get("cuda_runtime") is None:
        env["cuda_runtime"] = "none (a CPU build of torch)"
    if backend == "emulate":
        env["device"] = "none: emulate backend (virtual CUDA on the CPU), sync counts only"
    else:
        env["device"] = env.get("gpu") or "no GPU visible"
    return env
