import pytest
import torch

from pipeline.errors import UserError

pytestmark = pytest.mark.needs_torch


def test_int8_scheme():
    from pipeline.quant.schemes import get_scheme

    scheme = get_scheme("int8")
    assert scheme.activation.dtype == torch.int8
    assert (scheme.activation.quant_min, scheme.activation.quant_max) == (-128, 127)
    assert scheme.activation.qscheme == torch.per_tensor_affine
    assert (scheme.weight.quant_min, scheme.weight.quant_max) == (-127, 127)
    assert scheme.weight.qscheme == torch.per_channel_symmetric and scheme.weight.ch_axis == 0


def test_a16w8_scheme():
    from pipeline.quant.schemes import get_scheme

    scheme = get_scheme("a16w8")
    assert scheme.activation.dtype == torch.int16
    assert scheme.activation.qscheme == torch.per_tensor_symmetric
    assert scheme.weight.dtype == torch.int8


def test_unknown_scheme():
    from pipeline.quant.schemes import get_scheme

    with pytest.raises(
        UserError,
        match=r"u55/quantize: quantization scheme must be one of "
        r"int8, a16w8; got 'int4'",
    ):
        get_scheme("int4", where="u55/quantize")
