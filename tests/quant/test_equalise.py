import pytest
import torch
from torch import nn

pytestmark = pytest.mark.needs_torch


def _bn(channels: int) -> nn.BatchNorm2d:
    """A BatchNorm with trained-looking statistics (not the identity)."""
    bn = nn.BatchNorm2d(channels)
    with torch.no_grad():
        bn.weight.uniform_(0.2, 3.0)
        bn.bias.normal_()
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.3, 2.0)
    return bn


class ConvReluConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = _bn(16)
        self.relu = nn.ReLU(inplace=True)
        self.drop = nn.Dropout(0.1)
        self.conv2 = nn.Conv2d(16, 8, 3, stride=2, padding=1)

    def forward(self, x):
        return self.conv2(self.drop(self.relu(self.bn1(self.conv1(x)))))


class ConvDwConv(nn.Module):
    """MobileNet block with a channel multiplier of 2 and a residual written ``x += y``."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1, bias=False), _bn(8), nn.ReLU(inplace=True)
        )
        self.dw = nn.Sequential(
            nn.Conv2d(8, 16, 3, padding=1, groups=8, bias=False), _bn(16), nn.ReLU(inplace=True)
        )
        self.pw = nn.Sequential(nn.Conv2d(16, 8, 1, bias=False), _bn(8))
        self.expand = nn.Conv2d(8, 8, 1)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        y = self.pw(self.dw(self.stem(x)))
        z = self.expand(y)
        z += y  # y has two readers: pw -> expand is no pair
        return self.head(torch.relu_(z).mean((2, 3)))


class LinearReluLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(12, 32),
            nn.BatchNorm1d(32),
            nn.ReLU(inplace=True),
            nn.Dropout(0.2),
            nn.Linear(32, 16),
            nn.ReLU(),
            nn.Linear(16, 3),
        )
        with torch.no_grad():
            self.body[1].running_mean.normal_()
            self.body[1].running_var.uniform_(0.3, 2.0)

    def forward(self, x):
        return self.body(x)


class ConvRelu6Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return self.conv2(nn.functional.relu6(self.conv1(x)))


def normalised(model: nn.Module, shape):
    from pipeline.chain.export import normalise
    from pipeline.chain.export import export as export_program

    torch.manual_seed(0)
    model = model.eval()
    with torch.no_grad():  # unbalanced channels, as equalisation expects of trained nets
        for layer in model.modules():
            if isinstance(layer, nn.Conv2d | nn.Linear):
                layer.weight.mul_(
                    torch.exp(2 * torch.randn(layer.weight.shape[0])).reshape(
                        -1, *[1] * (layer.weight.dim() - 1)
                    )
                )
    x = torch.randn(*shape)
    program = export_program(model, (x,), "test")
    return normalise(program).module(check_guards=False), x


def pair_names(module):
    from pipeline.quant.equalise import find_pairs

    return [(p.first.node.name, p.second.node.name) for p in find_pairs(module)]


def weight_ranges(module, pair):
    from pipeline.quant.layers import get_tensor

    first = get_tensor(module, pair.first.weight).abs().flatten(1).amax(1)
    second = get_tensor(module, pair.second.weight).abs()
    return first, second


@pytest.mark.parametrize(
    "model, shape, pairs",
    [
        pytest.param(ConvReluConv(), (1, 3, 12, 12), 1, id="conv-relu-conv"),
        pytest.param(ConvDwConv(), (1, 3, 10, 10), 2, id="conv-dw-conv"),
        pytest.param(LinearReluLinear(), (1, 12), 2, id="linear-relu-linear"),
    ],
)
def test_equalisation_keeps_the_float_function(model, shape, pairs):
    from pipeline.quant.equalise import equalise

    module, x = normalised(model, shape)
    before = module(x).detach()
    record = equalise(module)
    after = module(x).detach()
    assert record["pairs"] == pairs
    assert float((after - before).abs().max()) <= 1e-5 * float(before.abs().max())


def test_equalised_ranges_are_balanced():
    from pipeline.quant.equalise import equalise, find_pairs

    module, _ = normalised(ConvReluConv(), (1, 3, 12, 12))
    equalise(module)
    (pair,) = find_pairs(module)
    first, second = weight_ranges(module, pair)
    torch.testing.assert_close(first, second.transpose(0, 1).flatten(1).amax(1), rtol=1e-5, atol=0)


def test_depthwise_channel_multiplier_maps_each_input_channel_to_its_outputs():
    from pipeline.quant.equalise import equalise, find_pairs

    module, _ = normalised(ConvDwConv(), (1, 3, 10, 10))
    equalise(module)
    stem_dw = find_pairs(module)[0]
    assert stem_dw.second.groups == 8
    first, second = weight_ranges(module, stem_dw)
    # depthwise weights [16, 1, 3, 3]: input channel i feeds outputs 2i and 2i + 1 (balanced
    # to the sweeps' tolerance: the dw -> pw pair rescales the depthwise rows again)
    torch.testing.assert_close(first, second.reshape(8, -1).amax(1), rtol=1e-3, atol=0)


def test_pairs_through_relu6_or_a_shared_tensor_are_left_alone():
    from pipeline.quant.equalise import equalise

    module, x = normalised(ConvRelu6Conv(), (1, 3, 8, 8))
    assert pair_names(module) == []
    assert equalise(module) == {"pairs": 0, "sweeps": 0}
    module, _ = normalised(ConvDwConv(), (1, 3, 10, 10))
    assert pair_names(module) == [("conv2d", "conv2d_1"), ("conv2d_1", "conv2d_2")]


def test_program_state_is_not_written():
    from pipeline.chain.export import normalise
    from pipeline.quant.equalise import equalise
    from pipeline.chain.export import export as export_program

    x = torch.randn(1, 3, 12, 12)
    program = export_program(ConvReluConv().eval(), (x,), "test")
    state = {k: v.clone() for k, v in program.state_dict.items()}
    equalise(normalise(program).module(check_guards=False))
    assert all(torch.equal(state[k], v) for k, v in program.state_dict.items())
