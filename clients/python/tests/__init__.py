"""The Python client's tests: run them with ``python3 tests/run.py``."""
