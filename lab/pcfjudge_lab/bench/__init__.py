"""Benchmarks run through the service code (``pcfjudge bench …``); they print measured figures, never assert them."""
