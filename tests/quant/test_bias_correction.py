import pytest
import torch
from torch import nn

pytestmark = pytest.mark.needs_torch


class DepthwiseNet(nn.Module):
    """Depthwise layers have few weights per channel: their quantization shifts the mean most."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True)
        )
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.drop = nn.Dropout(0.1)
        self.fc = nn.Linear(8, 5, bias=False)

    def forward(self, x):
        x = self.stem(x)
        y = self.dw(x)
        y += x
        return self.fc(self.drop(torch.relu_(y)).mean((2, 3)))


def normalised_and_samples(count: int = 8):
    from pipeline.chain.export import normalise
    from pipeline.chain.export import export as export_program

    torch.manual_seed(0)
    model = DepthwiseNet().eval()
    with torch.no_grad():
        model.stem[1].running_mean.normal_()
        model.stem[1].running_var.uniform_(0.3, 2.0)
        model.dw.weight.add_(0.15)  # low-pass, as trained depthwise filters lean
    samples = [(torch.rand(1, 3, 10, 10) * 2 - 1,) for _ in range(count)]
    program = export_program(model, samples[0], "test")
    return normalise(program).module(check_guards=False), samples


def test_quantized_weight_matches_what_the_quantize_flow_stores():
    from pipeline.quant.bias_correction import quantize_weight
    from pipeline.chain.quantize import quantize_program
    from pipeline.quant.layers import get_tensor
    from pipeline.quant.schemes import get_scheme

    conv = nn.Conv2d(4, 6, 3).eval()
    samples = [(torch.randn(1, 4, 6, 6),)]
    module = quantize_program(torch.export.export(conv, samples[0]), samples).module()
    dq = next(n for n in module.graph.nodes if "dequantize_per_channel" in str(n.target))
    stored, scales = (get_tensor(module, a.target) for a in dq.args[:2])
    assert stored.dtype == torch.int8
    expected = quantize_weight(conv.weight.detach(), get_scheme("int8").weight)
    torch.testing.assert_close(
        stored.float() * scales.reshape(-1, 1, 1, 1), expected, rtol=0, atol=0
    )


def _outputs(module, samples, name):
    """The input and output of the node called ``name`` over the samples."""
    inputs, outputs = [], []

    class Capture(torch.fx.Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            if n.name == name:
                inputs.append(self.env[n.args[0]])
                outputs.append(value)
            return value

    for sample in samples:
        Capture(module).run(*sample)
    return inputs, outputs


def with_quantized_weights(module, spec):
    """A copy of ``module`` whose conv/linear weights are quantized (biases as they are)."""
    from pipeline.quant.bias_correction import quantize_weight
    from pipeline.quant.layers import find_layers, get_tensor, set_tensor

    copy = copy_module(module)
    for layer in find_layers(copy).values():
        set_tensor(copy, layer.weight, quantize_weight(get_tensor(copy, layer.weight), spec))
    return copy


def copy_module(module):
    import copy

    return copy.deepcopy(module)


def channel_mean(values, axis):
    return torch.stack([v.movedim(axis, 0).flatten(1).mean(1) for v in values]).mean(0)


def test_on_float_inputs_each_layer_mean_error_is_removed():
    from pipeline.quant.bias_correction import correct_biases
    from pipeline.quant.layers import find_layers, get_tensor
    from pipeline.quant.schemes import get_scheme

    spec = get_scheme("int8").weight
    module, samples = normalised_and_samples()
    float_net = copy_module(module)
    corrected = copy_module(module)
    assert correct_biases(corrected, samples, spec, sequential=False) == {
        "layers": 3,
        "biases_added": 2,
    }
    quantized = with_quantized_weights(float_net, spec)
    for node, layer in find_layers(corrected).items():
        inputs, reference = _outputs(float_net, samples, node.name)
        weight = get_tensor(quantized, layer.weight)
        args = node.args[3:]
        old = None if layer.bias.startswith("_ptq") else get_tensor(float_net, layer.bias)
        new = get_tensor(corrected, layer.bias)
        before = channel_mean(
            [node.target(x, weight, old, *args) - y for x, y in zip(inputs, reference)],
            layer.channel_axis,
        )
        after = channel_mean(
            [node.target(x, weight, new, *args) - y for x, y in zip(inputs, reference)],
            layer.channel_axis,
        )
        assert after.abs().max() <= 0.01 * before.abs().max(), node.name


def test_sequential_correction_reduces_the_mean_error_of_the_quantized_network():
    from pipeline.quant.bias_correction import correct_biases
    from pipeline.quant.schemes import get_scheme

    spec = get_scheme("int8").weight
    module, samples = normalised_and_samples()
    reference = [module(*s).detach() for s in samples]
    plain = with_quantized_weights(module, spec)
    corrected = copy_module(module)
    correct_biases(corrected, samples, spec)
    corrected = with_quantized_weights(corrected, spec)

    def mean_error(net):
        return channel_mean([net(*s).detach() - r for s, r in zip(samples, reference)], -1)

    before, after = mean_error(plain).abs(), mean_error(corrected).abs()
    assert float(after.mean()) < 0.5 * float(before.mean())


def test_auto_keeps_the_correction_only_where_it_raises_the_calibration_sqnr():
    """The default (``auto``) quantizes with and without and keeps the graph of the higher
    SQNR over the calibration samples; the record says which and both figures."""
    from pipeline.chain.quantize import quantize as quantize_with_record
    from pipeline.quant.flow import sqnr_db
    from pipeline.chain.export import export as export_program

    torch.manual_seed(0)
    model = DepthwiseNet().eval()
    samples = [(torch.rand(1, 3, 10, 10) * 2 - 1,) for _ in range(8)]
    program = export_program(model, samples[0], "test")
    quantized, record = quantize_with_record(program, samples, bias_correction="auto")
    summary = record["bias_correction"]
    figures = summary["calibration_sqnr_db"]
    assert summary["mode"] == "auto" and summary["layers"] == 3
    assert summary["kept"] == (figures["with"] > figures["without"])
    assert sqnr_db(program, quantized, samples) == max(figures["with"], figures["without"])


class _ShiftedNet(nn.Module):
    """Depthwise filters of many small taps beside one large one per channel: the small taps
    all round to zero, so the quantized layer loses their sum on every (positive) input -
    the mean shift bias correction exists to remove."""

    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(6, 6, 5, padding=2, groups=6)
        self.act = nn.ReLU(inplace=True)
        self.head = nn.Conv2d(6, 4, 1)

    def forward(self, x):
        y = self.act(self.dw(x))
        y += x
        return self.head(y)


def _shifted_program():
    from pipeline.chain.export import export as export_program

    torch.manual_seed(0)
    model = _ShiftedNet().eval()
    with torch.no_grad():
        model.dw.weight.fill_(0.003)
        model.dw.weight[:, :, 2, 2] = 1.0
    samples = [(torch.rand(1, 6, 8, 8) + 0.5,) for _ in range(6)]
    return export_program(model, samples[0], "test"), samples


def _same_outputs(a, b, samples) -> bool:
    return all(torch.equal(x, y) for s in samples
               for x, y in zip(torch.utils._pytree.tree_leaves(a(*s)),
                               torch.utils._pytree.tree_leaves(b(*s))))


def test_auto_keeps_a_clear_win_from_one_conversion():
    """Where the correction beats the corrected graph with its own biases put back by more
    than the margin, ``auto`` keeps it without converting a second time: the graph is the
    one ``bias_correction=True`` gives."""
    from pipeline.chain.quantize import quantize

    program, samples = _shifted_program()
    auto, record = quantize(program, samples, bias_correction="auto")
    summary = record["bias_correction"]
    figures = summary["calibration_sqnr_db"]
    assert summary["kept"] and summary["conversions"] == 1, summary
    assert figures["with"] > figures["without"] + 0.25
    always, _ = quantize(program, samples, bias_correction=True)
    assert _same_outputs(auto.module(), always.module(), samples)


def test_auto_converts_twice_on_a_close_call_and_keeps_the_old_rule(monkeypatch):
    """A margin nothing beats sends every decision to the second conversion: then the graph
    is the better of the two full conversions, as the rule has always been."""
    from pipeline.chain.quantize import quantize
    from pipeline.quant import flow

    monkeypatch.setattr(flow, "KEEP_MARGIN_DB", float("inf"))
    program, samples = _shifted_program()
    auto, record = quantize(program, samples, bias_correction="auto")
    summary = record["bias_correction"]
    assert summary["conversions"] == 2
    figures = summary["calibration_sqnr_db"]
    chosen, _ = quantize(program, samples, bias_correction=summary["kept"])
    assert summary["kept"] == (figures["with"] > figures["without"])
    assert _same_outputs(auto.module(), chosen.module(), samples)


def test_biases_put_back_change_only_the_corrected_layers():
    """``_with_biases`` runs the converted graph with each named layer's bias replaced: the
    original biases move the outputs off the corrected graph's, the corrected ones leave
    them as they are, and a layer it cannot find gives nothing to compare against."""
    from pipeline.chain.export import normalise
    from pipeline.quant import flow
    from pipeline.tosa.registry import quant_rules

    program, samples = _shifted_program()
    originals: dict = {}
    converted, record = flow._converted(normalise(program), samples, "int8", "test", "mse",
                                        False, True, "per_channel", quant_rules(), originals)
    assert set(originals) == {"conv2d", "conv2d_1"} and record["bias_correction"]["layers"] == 2
    with torch.no_grad():
        put_back = flow._with_biases(converted, originals)
        assert not torch.equal(put_back(*samples[0]), converted(*samples[0]))
        nodes = {n.name: n for n in converted.graph.nodes}
        bias_of = {name: flow._outputs(_argument(converted, nodes[name], 2), samples[:1])[0][0]
                   for name in originals}
        same = flow._with_biases(converted, bias_of)
        assert torch.equal(same(*samples[0]), converted(*samples[0]))
    assert flow._with_biases(converted, {"no_such_node": None}) is None


def _argument(module, node, index):
    """A callable giving the value ``node``'s argument ``index`` takes when ``module`` runs."""
    target = node.args[index]

    class _Capture(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            if n is target:
                self.captured = result
            return result

    def captured(*sample):
        run = _Capture(module)
        run.run(*sample)
        return run.captured

    return captured
