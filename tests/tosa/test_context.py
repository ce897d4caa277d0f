import pytest

pytestmark = pytest.mark.needs_torch


def test_source_is_the_users_last_frame():
    from torch import fx

    from pipeline.fx import source_of

    node = fx.Graph().placeholder("x")
    node.meta["stack_trace"] = (
        '  File "/home/u/models/net.py", line 12, in forward\n'
        "    y = self.conv(x)\n"
        '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py", line 5, in forward\n'
        "    return self._conv_forward(input, self.weight, self.bias)\n"
    )
    assert source_of(node) == "/home/u/models/net.py:12 (y = self.conv(x))"
    node.meta["stack_trace"] = ""
    assert source_of(node) == ""


def test_source_falls_back_to_the_innermost_model_library_frame():
    """A model from a library (torchvision, transformers) is named at the library's line, not
    as an unknown source; torch's own frames come last."""
    from torch import fx

    from pipeline.fx import source_of

    node = fx.Graph().placeholder("x")
    node.meta["stack_trace"] = (
        '  File "/venv/lib/python3.11/site-packages/torchvision/models/resnet.py", line 96, in '
        "forward\n    out = self.conv1(x)\n"
        '  File "/venv/lib/python3.11/site-packages/torchvision/models/resnet.py", line 102, in '
        "forward\n    out += identity\n"
    )
    assert source_of(node).endswith("torchvision/models/resnet.py:102 (out += identity)")
