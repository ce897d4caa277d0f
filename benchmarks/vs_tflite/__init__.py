"""TFLite + Vela (litert-torch 0.10.0 int8 -> .tflite -> Vela) and ours, NPU cycles side by
side (``bench_vs_tflite.py``).

- ``env``: where litert-torch's environment is, whether it can run here;
- ``theirs``: their flow - PT2E int8 with litert-torch's own quantizer, calibrated on our
  samples, converted to .tflite in both input layouts (NCHW as the model takes it, NHWC
  through ``litert_torch.to_channel_last_io``), each compiled by Vela per NPU;
- ``cli``: the command line, both flows over the models, the table and the geomeans.

Our side is ``benchmarks/vs_executorch``'s: its models (a targets file's, inputs drawn by our
export stage) and ``ours.run_ours`` (the stage functions, as a cold build runs them).
Every module imports only the standard library at module level: ``--help`` and the tests
run without torch or litert-torch.
"""
