"""`python -m bench`: the same as `python bench/run.py`."""

from bench.run import main

if __name__ == "__main__":
    raise SystemExit(main())
