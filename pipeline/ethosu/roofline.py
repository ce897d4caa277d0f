"""A roofline per NPU operation: what Vela estimates against what the NPU allows.

Every figure comes from Vela's own outputs for the compile (``--enable-debug-db`` and the
summary CSV), none from a table kept here: per operation the MAC count, the IFM/OFM shapes,
types and the memory each lives in, the encoded weight bytes and the cycle estimate (the debug
database's ``perf`` and ``perf_debug`` tables); per network the accelerator's MACs per cycle,
the core clock and each memory's bandwidth (the summary). The hardware rates per operation
kind are those of Vela's cycle model (``ethos_u55_performance.cpp``, ``ethos_u85_performance.cpp``
in ethos-u-vela 5.2): a convolution's MAC array takes an 8-bit IFM at its full rate and a
16-bit one at half; a depthwise convolution uses one lane of the array's 8-wide dot product
(1/8 of the rate); pooling needs 4 cycles per 4 kernel elements of a micro-block (1/32).

The bound of an operation is the larger of
- the MAC bound: MACs / (peak MACs per cycle, halved for 16-bit IFMs), and
- the memory bound: per memory, the bytes that must cross it once (weights from the constant
  memory, IFMs and OFM from where Vela placed them) / its bytes per cycle; the largest.
Cycles are Vela's estimates: there is no Ethos-U hardware or FVP here.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

_BYTES = {"Int8": 1, "UInt8": 1, "Int16": 2, "UInt16": 2, "Int32": 4, "Int48": 6, "Int64": 8}
# The summary's names of a memory area -> the debug database's.
_AREAS = {"SRAM": "Sram", "DRAM": "Dram", "On-chip Flash": "OnChipFlash",
          "Off-chip Flash": "OffChipFlash"}
_BANDWIDTH = {"Sram": "sram_bandwidth", "Dram": "dram_bandwidth",
              "OnChipFlash": "on_chip_flash_bandwidth", "OffChipFlash": "off_chip_flash_bandwidth"}
# Fraction of the MAC array's rate an operation kind can use at best (Vela's cycle model).
_KIND_RATE = {"DepthwiseConv2D": 1 / 8, "MaxPool": 1 / 32, "AvgPool": 1 / 32,
              "ReduceMin": 1 / 32, "ReduceMax": 1 / 32, "ArgMax": 1 / 32}
_LOCATION = re.compile(r"^(?P<node>.*?) @ (?P<file>.+):(?P<line>\d+) \((?P<code>.*)\)$")
LOSSES = 10  # operations named in the biggest losses


def read_debug_db(path: Path, tables: tuple[str, ...] = ("perf", "perf_debug", "source")
                  ) -> dict[str, list[dict]]:
    """The tables of Vela's ``<network>_debug.xml`` (``--enable-debug-db``) as rows of dicts."""
    found = {}
    for table in ET.parse(path).getroot().iter("table"):
        if table.get("name") in tables:
            found[table.get("name")] = list(csv.DictReader(io.StringIO((table.text or "").strip())))
    return found


def network_figures(summary: dict, memory_mode: dict) -> dict:
    """Peak MACs per cycle, bytes per cycle of each memory, where weights and feature maps are.

    ``summary`` is a row of Vela's summary CSV; ``memory_mode`` the vela.ini section of the
    build's memory mode (``const_mem_area``, ``arena_mem_area``: AXI ports).
    """
    clock = float(summary["core_clock"])
    bandwidth = {area: float(summary[column]) * 2**30 / clock
                 for area, column in _BANDWIDTH.items()}
    weights = _AREAS[summary["weights_storage_area"]]
    arena = _AREAS[summary["feature_map_storage_area"]]
    # Vela names constants kept on the arena's own port "On-chip Flash" (Sram_Only): they
    # share the port, and its bandwidth, with the feature maps.
    if memory_mode.get("const_mem_area", "Axi0") == memory_mode.get("arena_mem_area", "Axi0"):
        weights = arena
    macs = int(re.search(r"(\d+)$", summary["accelerator_configuration"]).group(1))
    return {"accelerator": summary["accelerator_configuration"], "core_clock": clock,
            "peak_macs_per_cycle": macs, "weights_in": weights, "feature_maps_in": arena,
            "bytes_per_cycle": {k: round(v, 6) for k, v in bandwidth.items()}}


def _shape(row: dict, prefix: str) -> list[int]:
    return [int(row[f"{prefix}_shape_{d}"] or 0) for d in "nhwc"]


def _tensor_bytes(row: dict, prefix: str) -> int:
    shape = _shape(row, prefix)
    if not row.get(f"{prefix}_dtype") or not all(shape):
        return 0
    return _BYTES.get(row[f"{prefix}_dtype"], 1) * shape[0] * shape[1] * shape[2] * shape[3]


def layer_bound(row: dict, perf: dict, figures: dict) -> dict:
    """The roofline figures of one NPU operation (a ``perf_debug`` row and its ``perf`` row)."""
    macs = int(perf["mac_count"] or 0)
    bits = 8 * _BYTES.get(row["ifm_dtype"], 1)
    rate = figures["peak_macs_per_cycle"] * (0.5 if bits >= 16 else 1.0)
    moved: dict[str, int] = {}
    weights = int(row.get("weight_total_bytes") or 0)
    moved[figures["weights_in"]] = weights
    sizes = {p: _tensor_bytes(row, p) for p in ("ifm", "ifm2", "ofm")}
    for prefix, size in sizes.items():
        area = row.get(f"{prefix}_memory") or figures["feature_maps_in"]
        moved[area] = moved.get(area, 0) + size
    per_memory = {a: n / figures["bytes_per_cycle"][a] for a, n in moved.items() if n}
    memory_bound = max(per_memory.values(), default=0.0)
    mac_bound = macs / rate
    kind_bound = mac_bound / _KIND_RATE.get(perf["operator"], 1.0)
    bound = max(mac_bound, memory_bound)
    cycles = int(perf["op_cycles"])
    return {
        "operator": perf["operator"], "macs": macs, "ifm_dtype": row["ifm_dtype"].lower(),
        "ifm_shape": _shape(row, "ifm"), "ofm_shape": _shape(row, "ofm"),
        "weight_bytes": weights, "ifm_bytes": sizes["ifm"] + sizes["ifm2"],
        "ofm_bytes": sizes["ofm"], "mac_bound": round(mac_bound, 1),
        "kind_bound": round(kind_bound, 1), "memory_bound": round(memory_bound, 1),
        "memory_bound_by": max(per_memory, key=per_memory.get) if per_memory else None,
        "bound": round(bound, 1), "bound_by": "mac" if mac_bound >= memory_bound else "memory",
        "cycles": cycles, "utilisation": round(bound / cycles, 4) if cycles else None,
        "loss": round(cycles - bound, 1),
    }


def source_line(location: str) -> dict | None:
    """``{node, file, line, code}`` of a TOSA operator's location (``<node> @ <file>:<line>
    (<code>)``, as the lowering writes it), or None when it names no source line."""
    match = _LOCATION.match(location or "")
    if match is None:
        return None
    return {"node": match["node"], "file": match["file"], "line": int(match["line"]),
            "code": match["code"]}


def roofline(debug_db: Path, summary_csv: Path, tosa: Path, memory_mode: dict) -> dict:
    """The roofline of one Vela compile: per NPU operation (in command stream order) its
    figures and the model line it came from, the totals, and the biggest losses.

    Args:
        debug_db: Vela's ``<network>_debug.xml``.
        summary_csv: Vela's summary CSV of the same compile.
        tosa: the TOSA flatbuffer Vela compiled (its operators' locations name the model lines;
            Vela's ``source`` table keys each operation to its TOSA operator's index).
        memory_mode: the build's ``[Memory_Mode.*]`` section of vela.ini.
    """
    from pipeline.tosa.flatbuffer import read_block

    with open(summary_csv, newline="") as handle:
        figures = network_figures(next(csv.DictReader(handle)), memory_mode)
    tables = read_debug_db(debug_db)
    details = {row["id"]: row for row in tables.get("perf_debug", [])}
    sources = {row["id"]: row for row in tables.get("source", [])}
    operators = read_block(tosa, data=False).operators
    layers, seen = [], {}
    for perf in tables.get("perf", []):
        if perf["id"] not in details:
            continue
        name = perf["name"]
        seen[name] = seen.get(name, 0) + 1
        layer = {"name": name if seen[name] == 1 else f"{name} #{seen[name]}",
                 **layer_bound(details[perf["id"]], perf, figures)}
        key = int((sources.get(perf["source_id"]) or {}).get("ext_key") or -1)
        op = operators[key] if 0 <= key < len(operators) else None
        layer["tosa_operator"] = op.op if op else None
        layer["source"] = source_line(op.location) if op else None
        layers.append(layer)
    summed = totals(layers)
    # The whole network's bound, blind to how it is cut into operations: every MAC at the peak
    # rate, every weight byte once across the weights' memory. Feature maps are left out, so
    # a form of the graph with fewer or more operations keeps it.
    network = max(summed["macs"] / figures["peak_macs_per_cycle"],
                  summed["weight_bytes"] / figures["bytes_per_cycle"][figures["weights_in"]])
    summed["network_bound"] = round(network, 1)
    summed["times_network_bound"] = round(summed["cycles"] / network, 3) if network else None
    return {**figures, **summed, "layers": layers,
            "estimates": "Vela's estimates (no Ethos-U hardware or FVP here)"}


def totals(layers: list[dict]) -> dict:
    """Network totals: cycles against the limit (the sum of the bounds), against the MAC bound
    alone and against what each operation kind can reach; the biggest losses."""
    cycles = sum(layer["cycles"] for layer in layers)
    sums = {k: sum(layer[k] for layer in layers)
            for k in ("macs", "mac_bound", "memory_bound", "bound", "weight_bytes")}
    attainable = sum(max(x["kind_bound"], x["memory_bound"]) for x in layers)
    mapped = sum(1 for layer in layers if layer["source"])

    def times(limit: float) -> float | None:
        return round(cycles / limit, 3) if limit else None

    worst = sorted(layers, key=lambda layer: -layer["loss"])[:LOSSES]
    return {"cycles": cycles, "limit": round(sums["bound"], 1), "times_limit": times(sums["bound"]),
            "mac_limit": round(sums["mac_bound"], 1), "times_mac_limit": times(sums["mac_bound"]),
            "attainable": round(attainable, 1), "times_attainable": times(attainable),
            "macs": sums["macs"], "weight_bytes": sums["weight_bytes"],
            "mapped_layers": mapped, "unmapped_layers": len(layers) - mapped,
            "losses": [{k: x[k] for k in ("name", "operator", "cycles", "bound", "loss",
                                          "bound_by", "source")} for x in worst]}
