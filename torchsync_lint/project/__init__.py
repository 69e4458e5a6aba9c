"""The project view: linting one module with what the rest of the project says about it.

- ``layout``: the project root, source roots, module names and import resolution;
- ``summary``: what each module exports (returns, calls, per-step work, loaders, metrics),
  computed from the module alone and cached by its content;
- ``view``: the summaries joined along the imports (callers, returns, per-step chains, fed
  loaders);
- ``env``: one module's questions (analysis/env.py) answered from the view;
- ``session``: which modules a run needs, their summaries (cache or compute), the view;
- ``cache``: the on-disk cache under `.torchsync_cache/`.
"""
