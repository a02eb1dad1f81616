"""The pieces of ember.utils.benchmark, in torch's module layout: common (Measurement), timer, compare."""
