"""Ethos-U quantization for torchao PT2E: schemes, annotation patterns, the quantizer, the flow.

Imports torch/torchao: only imported by the quantize stage and tests.
"""
