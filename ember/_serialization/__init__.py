"""The pieces behind ember.serialization: the zip archive, and the torch-named pickling.

archive.py reads and writes PyTorch's zip container (records 64-byte aligned,
stored uncompressed, so a storage can be memory-mapped where it lies);
pickling.py turns ember objects into the pickle torch.save writes, and back.
"""
