"""Runnable examples: `python -m ember.examples.digits`, `python -m ember.examples.gpt`."""
