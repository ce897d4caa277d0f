"""Real model families, written the way torchvision, timm and keyword-spotting code writes them
(in-place activations, ``out += identity``, dropout, squeeze-excite, stochastic depth, int64
token ids and attention masks), with random weights and non-trivial BatchNorm statistics.

Hugging Face encoders come from ``transformers`` itself (``hf.py``). PyPI's torchvision,
torchaudio and timm do not load beside this project's CPU torch, so their architectures are
written out here (``vision.py``, ``audio.py``) from the papers' and libraries' layer lists.
"""
