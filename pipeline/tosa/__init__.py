"""Lowering of quantized (or float) torch.export programs to TOSA 1.0 flatbuffers.

    ExportedProgram --FX passes--> integer FX graph --operator visitors--> TosaGraph
                    --TOSA passes--> TosaGraph --serialize--> .tosa (+ io description)

* ``spec.py``        the TOSA spec a lowering targets (version, profiles, extensions)
* ``passes/``        one pass per file; ``passes/__init__.py`` holds the one ordered list
* ``ops/op_*.py``    one file per operator: its visitor, registered with ``@lowers(<aten
                     target>)``, and ``OPERATOR = Operator(...)``: its doc line, quantization
                     rule, NPU rules and profiles
* ``registry.py``    finds the operator files; ``context.py`` is what a visitor sees
* ``emit/``          emission helpers visitors share (``common.py``, ``conv.py``, ``pooling.py``,
                     ``elementwise.py``, ``fp.py``, ...)
* ``functions/``     elementwise functions: the ``unary.py`` registry, tables, rounding, integers
* ``quant_math.py``  QParams and RESCALE multiplier/shift math (rounding documented there)
* ``graph.py``       the in-memory TOSA graph passes edit; ``serialize.py`` writes it,
                     ``flatbuffer.py`` is the one TOSA reader (tensors, operators, attributes)
                     and its byte edits
* ``lowering.py``    the driver

Running a graph in the TOSA reference model is ``pipeline/verify/reference_model.py``; the
Ethos-U operator rules checked on a .tosa before Vela are ``pipeline/ethosu/placement.py``.

Adding an operator: ``ops/op_<name>.py`` (its visitor and its ``OPERATOR`` declaration) and
``tests/tosa/ops/test_op_<name>.py``; then ``python -m pipeline.graph.operator_docs --write``
regenerates ``docs/operators.md``.
Composite operators with no integer TOSA form (softmax, layer_norm) are written out in
primitives before quantization (``pipeline/normalise/decompose.py``); the driver applies the same
decompositions to float programs (FP profile). Float forms of the TABLE functions (gelu,
silu, ...) are in ``emit/fp.py``.
Modules here import torch and the TOSA bindings; only the lower/verify stages import them.
"""
