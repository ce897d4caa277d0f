"""Vela's figures of one flow, summed over its Vela calls, and the ratios the tables show."""

from __future__ import annotations


def sum_figures(calls: list[dict]) -> dict:
    """One set of figures from the Vela calls of one flow (several delegates add up)."""
    keys = ("cycles_npu", "cycles_total", "sram_memory_used", "on_chip_flash_memory_used",
            "off_chip_flash_memory_used", "npu_operators", "cpu_operators")
    total = {k: sum(float(c.get(k) or 0) for c in calls) for k in keys}
    total["flash_kib"] = total["on_chip_flash_memory_used"] + total["off_chip_flash_memory_used"]
    total["vela_calls"] = len(calls)
    return total


def npu_share(figures: dict, extra_cpu: int = 0) -> float | None:
    """NPU operators / all operators (``extra_cpu``: operators left outside the delegates)."""
    if not figures:
        return None
    npu = figures["npu_operators"]
    total = npu + figures["cpu_operators"] + extra_cpu
    return npu / total if total else None


def divide(a, b) -> float | None:
    """a / b, or None when either is missing or b is 0."""
    if a is None or b is None or not b:
        return None
    return a / b
