"""Public entry points of the fixer (the implementation lives in ``torchsync_lint.fixing``).

``fix_source`` is the pure core (text in, ``FixResult`` out); ``run_fix_command`` is what the
CLI calls for ``--fix`` and ``--diff``.
"""

from __future__ import annotations

from torchsync_lint.fixing.command import run_fix_command
from torchsync_lint.fixing.loop import MAX_ROUNDS, FixResult, allowed_levels, fix_source, validate

__all__ = ["MAX_ROUNDS", "FixResult", "allowed_levels", "fix_source", "run_fix_command", "validate"]
