"""ExecuTorch 1.5.1's Arm Ethos-U AOT flow and ours, side by side (``bench_vs_executorch.py``).

- ``env``: where ExecuTorch's environment is, whether it can run here, quiet library logging;
- ``models``: the models of a targets file and the inputs our export stage draws for them;
- ``ours``: our stages, cold, timed; ``theirs``: ExecuTorch's flow, with Vela tapped;
- ``sqnr``: SQNR against the float model (torch, and their TOSA graph in the reference model);
- ``figures``: Vela's figures of a flow, summed over its calls;
- ``run``: both flows over the models, alternating; ``report``: the tables and goal verdicts;
- ``end_to_end``: a cold ``doit`` build against their flow, each in a subprocess;
- ``cli``: the command line.

Every module imports only the standard library at module level: ``--help`` and the tests run
without torch or ExecuTorch.
"""
