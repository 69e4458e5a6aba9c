"""The refactoring suite (issue 38): the analysis must find the same hazards after
semantics-preserving rewrites of code it already understands. See test_robustness.py."""
