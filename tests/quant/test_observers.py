import pytest
import torch
from torch import nn

pytestmark = pytest.mark.needs_torch

INT8 = dict(dtype=torch.int8, qscheme=torch.per_tensor_affine, quant_min=-128, quant_max=127)
INT16 = dict(dtype=torch.int16, qscheme=torch.per_tensor_symmetric, quant_min=-32767,
             quant_max=32767)


def observe(cls, batches, **spec):
    observer = cls(**spec)
    for batch in batches:
        observer(batch)
    return observer


def mse(x, observer) -> float:
    """Mean squared error of fake-quantizing ``x`` with the observer's qparams."""
    scale, zero_point = (float(v) for v in observer.calculate_qparams())
    q = torch.clamp(torch.round(x / scale) + zero_point, observer.quant_min, observer.quant_max)
    return float(((q - zero_point) * scale - x).pow(2).mean())


def heavy_tailed(seed=0):
    """Laplace samples: exponential tails, which int8 clips at about 9.9 times the scale
    (Banner et al., ACIQ) once there are enough samples for the max to lie beyond that."""
    torch.manual_seed(seed)
    return [torch.distributions.Laplace(0.0, 1.0).sample((50000,)) for _ in range(4)]


def uniform(seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.rand(5000, generator=generator) * 3 - 1 for _ in range(4)]


def test_clips_a_heavy_tail_with_less_error_than_min_max():
    from torchao.quantization.pt2e.observer import MinMaxObserver

    from pipeline.quant.observers import MseObserver

    data = heavy_tailed()
    ours, minmax = observe(MseObserver, data, **INT8), observe(MinMaxObserver, data, **INT8)
    x = torch.cat(data)
    assert float(ours.calculate_qparams()[0]) < 0.9 * float(minmax.calculate_qparams()[0])
    assert mse(x, ours) < 0.97 * mse(x, minmax)


def test_a16w8_keeps_the_tail_where_clipping_does_not_pay():
    """int16's step is 256 times finer: the rounding error left to save is smaller than what
    clipping even the rarest outlier costs."""
    from torchao.quantization.pt2e.observer import MinMaxObserver

    from pipeline.quant.observers import MseObserver

    data = heavy_tailed()
    ours, minmax = observe(MseObserver, data, **INT16), observe(MinMaxObserver, data, **INT16)
    x = torch.cat(data)
    assert float(ours.calculate_qparams()[0]) == pytest.approx(
        float(minmax.calculate_qparams()[0]), rel=0.01)
    assert mse(x, ours) <= mse(x, minmax) * 1.0001


@pytest.mark.parametrize("spec", [INT8, INT16], ids=["int8", "a16w8"])
def test_keeps_min_max_on_uniform_data(spec):
    """Within a step: trimming a fraction of a step off a uniform's ends shrinks every other
    value's rounding error more than it costs at the ends."""
    from torchao.quantization.pt2e.observer import MinMaxObserver

    from pipeline.quant.observers import MseObserver

    data = uniform()
    ours, minmax = observe(MseObserver, data, **spec), observe(MinMaxObserver, data, **spec)
    scale, zero_point = ours.calculate_qparams()
    expected_scale, expected_zero_point = minmax.calculate_qparams()
    assert float(scale) == pytest.approx(float(expected_scale), rel=0.01)
    assert abs(int(zero_point) - int(expected_zero_point)) <= 1


def test_a16w8_qparams_are_symmetric():
    from pipeline.quant.observers import MseObserver

    _, zero_point = observe(MseObserver, heavy_tailed(), **INT16).calculate_qparams()
    assert int(zero_point) == 0


@pytest.mark.parametrize("lo, hi", [(-8.0, 8.0), (-3.0, 2.0), (-0.5, 0.5), (0.0, 0.3),
                                    (-0.02, 0.05)])
def test_expected_error_is_the_error_of_quantizing_the_samples(lo, hi):
    """The error model (exact sums beyond the range, the rounding sawtooth within it) against
    fake-quantizing the very samples, for ranges from generous to far too narrow."""
    from pipeline.quant.observers import MseObserver

    x = torch.cat(heavy_tailed()).double()
    observer = observe(MseObserver, [x.float()], **INT8)
    candidate = torch.tensor([[lo]], dtype=torch.float64), torch.tensor([[hi]],
                                                                         dtype=torch.float64)
    step, low, high = observer.grid(*candidate)
    zero_point = -128 - round(float(low) / float(step))
    q = torch.clamp(torch.round(x / float(step)) + zero_point, -128, 127)
    actual = float(((q - zero_point) * float(step) - x).pow(2).mean())
    assert float(observer.expected_error(*candidate)) == pytest.approx(actual, rel=0.01)


def test_a_widening_range_rebins_without_losing_values():
    from pipeline.quant.observers import MseObserver

    batches = [torch.rand(1000) * 0.01, torch.rand(1000) * 10 - 5, torch.rand(10) * 1000]
    observer = observe(MseObserver, batches, **INT8)
    (histogram,) = observer.histograms
    x = torch.cat(batches).double()
    assert float(histogram.stats[0].sum()) == x.numel()
    assert float(histogram.stats[1].sum()) == pytest.approx(float(x.sum()), rel=1e-9)
    assert float(histogram.stats[2].sum()) == pytest.approx(float((x * x).sum()), rel=1e-9)
    assert (float(observer.min_val), float(observer.max_val)) == (float(x.min()), float(x.max()))


def test_exact_zeros_cost_nothing():
    """Half of a relu's output is 0, which every grid holds exactly: only the rest counts."""
    from pipeline.quant.observers import MseObserver

    x = torch.relu(torch.cat(heavy_tailed()))
    observer = observe(MseObserver, [x], **INT8)
    assert observer.histograms[0].zeros == float((x == 0).sum())
    assert float(observer.histograms[0].stats[0].sum()) == float((x != 0).sum())
    assert int(observer.calculate_qparams()[1]) == -128  # [0, hi]: zero at the lowest code


class PoolNet(nn.Module):
    """relu -> global average pool -> reshape -> linear: the pool and the reshape share the
    relu's qparams, so one observer sees three tensors per sample."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 8, 3)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return self.fc(nn.functional.adaptive_avg_pool2d(y, 1).reshape(1, 8))


def test_a_shared_observer_weighs_each_tensor_and_skips_a_reshape():
    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e

    from pipeline.chain.export import normalise
    from pipeline.quant.observers import MseObserver, count_observed_tensors
    from pipeline.quant.quantizer import EthosUQuantizer
    from pipeline.tosa.registry import quant_rules

    samples = [(torch.randn(1, 3, 8, 8),) for _ in range(3)]
    program = torch.export.export(PoolNet().eval(), samples[0])
    prepared = prepare_pt2e(normalise(program).module(check_guards=False),
                            EthosUQuantizer("int8", "mse", rules=quant_rules()))
    count_observed_tensors(prepared)
    for sample in samples:
        prepared(*sample)
    calls = [n for n in prepared.graph.nodes if n.op == "call_module"]
    shared = [prepared.get_submodule(n.target) for n in calls]
    observer = next(o for o in shared if isinstance(o, MseObserver) and o.tensors == 3)
    relu, pool = observer.histograms  # the reshape repeats the pool's values: no third
    assert relu.values == 3 * 8 * 6 * 6 and pool.values == 3 * 8


def test_the_quantize_stage_defaults_to_the_mse_observer(tmp_path):
    """End to end through export (inputs from a factory: Laplace samples) and the quantize
    stage with no settings: the program is the mse observer's, its input range is narrower
    than min/max's and its error over the test inputs lower."""
    from pipeline.programs import load_program
    from pipeline.stages.export import export
    from pipeline.stages.quantize import quantize

    source = tmp_path / "tailed.py"
    source.write_text(
        "import torch\n"
        "class Double(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * 2\n"
        "def laplace():\n"
        "    return torch.distributions.Laplace(0.0, 1.0).sample((1, 4096))\n")
    out = export(source, "Double", tmp_path / "export", input_factory=(source, "laplace"))
    float_fn = load_program(out["model"]).module()
    tests = torch.load(out["test_inputs"], weights_only=True)
    scales, errors = {}, {}
    for observer in ("default", "mse", "minmax"):
        path = tmp_path / f"{observer}.pt2"
        options = {} if observer == "default" else {"observer": observer}
        quantize(out["model"], out["calibration"], path, **options)
        program = load_program(path)
        scales[observer] = [float(n.args[1]) for n in program.graph.nodes
                            if n.target == torch.ops.quantized_decomposed.quantize_per_tensor
                            .default]
        with torch.no_grad():
            errors[observer] = sum(float((program.module()(*t) - float_fn(*t)).pow(2).sum())
                                   for t in tests)
    assert scales["default"] == scales["mse"]
    # Clipped, though held_out.py grows the fitted range a little (new samples' tails reach
    # past the 16 calibration samples' fit).
    assert scales["mse"][0] < 0.95 * scales["minmax"][0]
    assert errors["mse"] < errors["minmax"], errors
