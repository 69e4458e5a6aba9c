"""torchsync-lint: find, fix and prove hidden CPU-GPU syncs in PyTorch training code.

The lint path (this package minus ``torchsync_lint.verify``) depends on libcst only and
never imports torch, so it stays cheap enough to run on every commit.
"""

__version__ = "0.1.0"

from torchsync_lint.types import Applicability, Edit, Finding, Fix, Invalid, Valid  # noqa: E402

__all__ = ["Applicability", "Edit", "Finding", "Fix", "Invalid", "Valid", "__version__"]
