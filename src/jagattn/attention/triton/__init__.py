"""Triton kernels of softmax varlen attention: ``fwd.py`` (forward), ``bwd.py`` (backward)."""
