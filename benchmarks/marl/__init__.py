"""The MARL benchmark grid behind ``benchmarks/bench_marl.py``.

``tasks`` names the environments (the pricing game and two non-EVCS multi-agent tasks),
``runners`` trains one (library, algorithm) pair on one task and seed in whatever Python
environment has that library, ``evaluation`` scores the result the same way for every
library, and ``report`` turns the cells into marl-eval JSON, a CSV, a table and plots.
"""
