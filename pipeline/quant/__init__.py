"""Ethos-U quantization for torchao PT2E: schemes, annotation patterns, the quantizer, the flow.

Imports torch/torchao: only imported by the quantize stage and tests.
"""

import logging
import os

# torchao tries to load its CUDA/cutlass kernels at import and logs a warning per library it
# cannot load; PT2E on the CPU uses none of them, so skip them and keep the import quiet.
os.environ.setdefault("TORCHAO_FORCE_SKIP_LOADING_SO_FILES", "1")
# torchao registers enums with pytree at import, which torch 2.13 logs as deprecated.
logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)
_torchao_log = logging.getLogger("torchao")
_level = _torchao_log.level
_torchao_log.setLevel(logging.ERROR)
import torchao  # noqa: F401  (imported for its side effects, quietly)

_torchao_log.setLevel(_level)
