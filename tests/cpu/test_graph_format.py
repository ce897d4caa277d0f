"""The CPU graph format: what the writer produces (header, memory plan, info), the clear
errors for graphs the kernels cannot run, and the runtime's checks of a damaged file, each a
one-line message from tosa_cpu_run (built with ASan and UBSan)."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest

from pipeline.cpu.graph_format import (
    ALIGN,
    HEADER,
    TENSOR,
    CpuGraphError,
    check_supported,
    encode,
    plan_arena,
    read_header,
    write_cpu_graph,
)
from pipeline.cpu.tosa_read import CpuOp, CpuTensor, CpuTosaGraph, read_graph
from tests.cpu.cpu_helpers import Graph, build_tool, random, run, run_cpu

pytestmark = [pytest.mark.needs_tosa_ref]


@pytest.fixture(scope="module")
def tool(request):
    return build_tool(request)


def chain(length: int = 5) -> Graph:
    """x -> ADD -> ADD -> ... (each with a constant), outputs the last and the first sum."""
    g = Graph()
    x = g.input("x", random((4, 8, 8), "int32", 0, -100, 100), "int32")
    sums = []
    for i in range(length):
        x = g.op("ADD", [x, g.const(np.full((1, 1, 8), i, np.int32), "int32")], (4, 8, 8),
                 "int32")
        sums.append(x)
    return g.output(sums[-1], sums[0])


def test_header_and_info_describe_the_graph(tmp_path):
    tosa = chain().write(tmp_path / "chain.tosa")
    info = write_cpu_graph(tosa, tmp_path / "chain.tcg")
    header = read_header(tmp_path / "chain.tcg")
    assert header["version"] == info.version == 1
    assert header["file_bytes"] == info.file_bytes == (tmp_path / "chain.tcg").stat().st_size
    assert header["arena_bytes"] == info.arena_bytes
    assert info.op_counts == {"ADD": 5}
    assert [(t.name, t.shape, t.dtype) for t in info.inputs] == [("x", (4, 8, 8), "int32")]
    assert [t.shape for t in info.outputs] == [(4, 8, 8), (4, 8, 8)]
    assert header["tensors"] == 1 + 5 + 5  # input, 5 sums, 5 constants
    assert not (tmp_path / "chain.tcg.tmp").exists()


def test_memory_plan_reuses_dead_tensors_and_never_overlaps_live_ones(tmp_path):
    graph = read_graph(chain(8).write(tmp_path / "chain.tosa"))
    offsets, arena = plan_arena(graph.tensors, graph.ops, graph.inputs, graph.outputs)
    size = 4 * 8 * 8 * 4
    # Live at once: the input or previous sum, the new sum, and the first sum (an output).
    assert arena == 3 * size
    assert all(offset % ALIGN == 0 for offset in offsets.values())
    spans = {}
    for step, op in enumerate(graph.ops):
        for name in [*op.inputs, *op.outputs]:
            if name in offsets:
                first, last = spans.get(name, (step, step))
                spans[name] = (min(first, step), max(last, step))
    for name in graph.outputs:
        spans[name] = (spans[name][0], len(graph.ops))
    for a in spans:
        for b in spans:
            lives = spans[a][0] <= spans[b][1] and spans[b][0] <= spans[a][1]
            apart = (offsets[a] + size <= offsets[b]) or (offsets[b] + size <= offsets[a])
            assert a == b or not lives or apart, (a, b)


def test_unsupported_operator_type_or_operand_is_named(tmp_path):
    g = Graph()
    a = g.input("a", random((2, 3), "int32", 0), "int32")
    g.output(g.op("CLZ", [a], (2, 3), "int32"))
    graph = read_graph(g.write(tmp_path / "g.tosa"))
    exp = CpuOp("EXP", ("a",), graph.ops[0].outputs, ())
    with pytest.raises(CpuGraphError, match=r"^g\.tosa: every operator and tensor must be one the "
                                            r"CPU kernels run \(INT profile operators ABS, .*\); "
                                            r"got EXP$"):
        check_supported(graph.tensors, [exp], "g.tosa")
    wide = {**graph.tensors, "a": CpuTensor("fp32", (2, 3), None)}
    with pytest.raises(CpuGraphError, match=r"; got tensor a of type fp32$"):
        check_supported(wide, graph.ops, "g.tosa")
    many = CpuOp("CONCAT", ("a",) * 17, graph.ops[0].outputs, (0,))
    with pytest.raises(CpuGraphError, match=r"; got CONCAT with 17 inputs \(at most 16\)$"):
        check_supported(graph.tensors, [many], "g.tosa")


def test_a_computed_scalar_operand_is_an_error(tmp_path):
    g = Graph()
    x = g.input("x", random((2, 3), "int32", 0), "int32")
    shift = g.input("shift", np.zeros((1,), np.int8), "int8")
    g.output(g.op("MUL", [x, x, shift], (2, 3), "int32"))
    with pytest.raises(CpuGraphError, match=r"operator 0 \(MUL\): operand shift must be a "
                                            r"constant; got a computed tensor$"):
        encode(g.write(tmp_path / "g.tosa"))


def _damage(blob: bytes, field: int, value: int) -> bytes:
    words = list(HEADER.unpack_from(blob))
    words[field] = value
    return HEADER.pack(*words) + blob[HEADER.size:]


@pytest.fixture(scope="module")
def chain_blob(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chain")
    blob, _ = encode(chain().write(folder / "chain.tosa"))
    return blob


DAMAGE = {
    # name: (change to the blob, the message tosa_cpu_run must print)
    "bad_magic": (lambda b: b"XPCU" + b[4:],
                  r"magic \('TCPU'\) must be 0x55504354; got 0x55435058"),
    "future_version": (lambda b: _damage(b, 1, 2), r"format version must be 1; got 2"),
    "truncated": (lambda b: b[:-8],
                  r"blob bytes \(the header's file bytes\) must be (\d+); got (?!\1)\d+"),
    "arena_too_small_for_a_tensor": (lambda b: _damage(b, 3, 256),
                                     r"arena tensor end must be <= 256; got \d+"),
    "ops_past_the_end": (lambda b: _damage(b, 8, 1 << 20), r"operators must be <= \d+; got \d+"),
}


@pytest.mark.needs_cmake
@pytest.mark.parametrize("case", list(DAMAGE))
def test_runtime_rejects_a_damaged_graph_in_one_line(case, chain_blob, tool, tmp_path):
    change, message = DAMAGE[case]
    (tmp_path / "bad.tcg").write_bytes(change(chain_blob))
    np.save(tmp_path / "x.npy", np.zeros((4, 8, 8), np.int32))
    result = run([tool, "--graph", tmp_path / "bad.tcg", "--input", tmp_path / "x.npy",
                  "--output-dir", tmp_path], check=False)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, result.stderr  # the check's line, then what it means
    assert lines[0].startswith("graph.cc:") and "tosa_cpu graph: " in lines[0]
    assert re.search(message, lines[0]), lines[0]


@pytest.mark.needs_cmake
def test_runtime_rejects_an_operand_that_does_not_fit_its_operator(chain_blob, tool, tmp_path):
    blob = bytearray(chain_blob)
    header = HEADER.unpack_from(blob)
    tensors_offset = header[5]
    # The first tensor is the input: give it a different last dimension (bytes kept valid).
    record = list(TENSOR.unpack_from(blob, tensors_offset))
    record[2:5] = [4, 16, 4]
    TENSOR.pack_into(blob, tensors_offset, *record)
    (tmp_path / "bad.tcg").write_bytes(bytes(blob))
    np.save(tmp_path / "x.npy", np.zeros((4, 16, 4), np.int32))
    result = run([tool, "--graph", tmp_path / "bad.tcg", "--input", tmp_path / "x.npy",
                  "--output-dir", tmp_path], check=False)
    assert result.returncode == 1
    assert "ADD: operand dimension must equal the output's or be 1" in result.stderr


@pytest.mark.needs_cmake
def test_tool_checks_its_inputs(chain_blob, tool, tmp_path):
    (tmp_path / "g.tcg").write_bytes(chain_blob)
    np.save(tmp_path / "wrong_type.npy", np.zeros((4, 8, 8), np.int16))
    np.save(tmp_path / "wrong_size.npy", np.zeros((4, 8, 7), np.int32))
    cases = {
        "": "--input must name 1 files (one per graph input); got 0",
        str(tmp_path / "wrong_type.npy"): "npy type must be <i4 (int32)",
        str(tmp_path / "wrong_size.npy"): "data bytes must be 1024 (int32 (4,8,8)); got 896",
        str(tmp_path / "missing.npy"): "missing.npy must be a readable file",
    }
    for inputs, message in cases.items():
        argv = [tool, "--graph", tmp_path / "g.tcg", "--output-dir", tmp_path]
        result = run(argv + (["--input", inputs] if inputs else []), check=False)
        assert result.returncode == 1 and message in result.stderr, result.stderr
    assert run([tool, "--graph", tmp_path / "g.tcg", "--bogus", "1"], check=False).returncode == 2


@pytest.mark.needs_cmake
def test_raw_inputs_segments_and_info(chain_blob, tool, tmp_path):
    (tmp_path / "g.tcg").write_bytes(chain_blob)
    x = random((4, 8, 8), "int32", 3, -100, 100)
    x.tofile(tmp_path / "x.bin")
    _, outputs = run_cpu(tool, tmp_path / "g.tcg", [x], tmp_path)
    want_first = x + 0
    want_last = x + np.arange(5).sum()
    raw = run([tool, "--graph", tmp_path / "g.tcg", "--input", tmp_path / "x.bin",
               "--output-dir", tmp_path])
    assert raw.returncode == 0
    assert np.array_equal(np.load(tmp_path / "output_0.npy"), want_last)
    assert np.array_equal(outputs[1], want_first)
    # Operator 0 alone writes the first sum.
    run([tool, "--graph", tmp_path / "g.tcg", "--input", tmp_path / "x.bin", "--output-dir",
         tmp_path, "--ops", "0:1"])
    assert np.array_equal(np.load(tmp_path / "op_0_0.npy"), want_first)
    info = run([tool, "--graph", tmp_path / "g.tcg", "--info"]).stdout
    assert f'"arena_bytes": {struct.unpack_from("<I", chain_blob, 12)[0]}' in info
    assert '"ops": 5' in info


def test_a_graph_segment_encodes_like_a_file(tmp_path):
    """A caller cutting a graph into segments passes the parsed graph: same bytes."""
    tosa = chain().write(tmp_path / "chain.tosa")
    graph = read_graph(tosa)
    assert encode(graph)[0] == encode(tosa)[0]
    head = CpuTosaGraph(graph.tensors, graph.ops[:2], graph.inputs, [graph.ops[1].outputs[0]])
    blob, info = encode(head, "chain/segment 0")
    assert info.op_counts == {"ADD": 2} and blob[:4] == b"TCPU"
