"""Lowering of quantized (or float) torch.export programs to TOSA 1.0 flatbuffers.

    ExportedProgram --FX passes--> integer FX graph --operator visitors--> TosaGraph
                    --TOSA passes--> TosaGraph --serialize--> .tosa (+ io description)

* ``spec.py``        the TOSA spec a lowering targets (version, profiles, extensions)
* ``passes/``        one pass per file; ``passes/__init__.py`` holds the one ordered list
* ``ops/op_*.py``    one file per operator: its visitor, registered with ``@lowers(<aten
                     target>)``, and ``OPERATOR = Operator(...)``: its doc line, quantization
                     rule, NPU rules and profiles
* ``registry.py``    finds the operator files; ``context.py`` is what a visitor sees
* ``flatbuffer.py``  the one TOSA reader (tensors, operators, attributes) and its byte edits
* ``emit.py``, ``conv.py``, ``pooling.py``, ``elementwise.py``  emission helpers visitors share
* ``quant_math.py``  QParams and RESCALE multiplier/shift math (rounding documented there)
* ``graph.py``       the in-memory TOSA graph passes edit; ``serialize.py`` writes it
* ``lowering.py``    the driver; ``reference_model.py`` runs a graph in the TOSA reference model

Adding an operator: ``ops/op_<name>.py`` (its visitor and its ``OPERATOR`` declaration) and
``tests/tosa/ops/test_op_<name>.py``; then ``python -m pipeline.graph.operator_docs --write``
regenerates ``docs/operators.md``.
Composite operators with no integer TOSA form (softmax, layer_norm) are written out in
primitives before quantization (``pipeline/normalise/decompose.py``); the driver applies the same
decompositions to float programs (FP profile). Float forms of the TABLE functions (gelu,
silu, ...) are in ``fp_emit.py``.
Modules here import torch and the TOSA bindings; only the lower/verify stages import them.
"""
