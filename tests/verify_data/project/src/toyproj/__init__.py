"""The package train.py imports (a src/ layout, not installed)."""
