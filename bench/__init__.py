"""ember's benchmarks: each module with a WORKLOADS list is timed against torch by bench/run.py.

Run `python -m bench` (or `python bench/run.py`); see bench/common.py for how
timing works and why.  Nothing here is a test: no time is asserted anywhere.
"""
