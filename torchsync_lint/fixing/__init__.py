"""The fixer: applies the fixes rules attach to findings (see ``torchsync_lint.fixer``).

- ``edits``: positions to offsets, overlap selection, applying edits, adding imports;
- ``loop``: the pure lint -> fix -> re-parse loop (``fix_source``);
- ``command``: ``--fix``/``--diff`` for the CLI (files, atomic writes, diffs, summary).
"""
