"""The compile chain over objects in memory, wired once: ``export`` (torch.export and the
normalisation), ``quantize`` (PT2E), ``lower`` (TOSA, with each NPU family's variant).

The stages run these steps over files (``pipeline/stages/``); tests and benchmarks call them
directly, with nothing saved and loaded back between steps. A stage imports only the steps
it runs, so its key covers no other step's code (``pipeline/graph/code.py``). These modules
are also where the normalisation learns which operators the lowering takes as they are: the
rooms below never import the rooms above them.
"""
