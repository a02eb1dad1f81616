"""ember.models: reference models written with ember.nn (not part of torch's API; torchvision-style extras).

- bert: a BERT encoder that loads Hugging Face checkpoints, and a sentence-transformers SentenceEncoder.
"""
