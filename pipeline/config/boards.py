"""Where a CPU-only target's artifact runs when the build checks it: the QEMU machine per CPU.

A Cortex-M target's firmware is linked for the Arm MPS2/MPS3 FPGA image of its CPU (the board
QEMU models), so the one ELF runs on the board and under ``qemu-system-arm``. QEMU has no
Cortex-M0/M0+/M23/M35P/M52/M85: those run on the nearest emulated CPU whose architecture
contains theirs (the firmware is still built with the target's own ``-mcpu``/``-march``, so
it holds only instructions of the target's ISA), and the report says so. Cortex-A targets are
static Linux programs run by ``qemu-aarch64`` (user mode) with the matching ``-cpu``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Board:
    """The emulated machine a CPU's artifact runs on.

    Attributes:
        board: the CMake board name (``ETHOSU_RT_BOARD``) the firmware is linked for; None
            for Linux targets.
        qemu: ``qemu-system-arm`` machine (``-M``), or ``qemu-aarch64`` for Linux.
        qemu_cpu: the CPU QEMU emulates there (its ``-cpu`` for ``qemu-aarch64``).
        substitute: why the emulated CPU differs from the target's, else None.
    """

    board: str | None
    qemu: str
    qemu_cpu: str
    substitute: str | None = None


def _m(board: str, qemu_cpu: str, why: str | None = None) -> Board:
    return Board(board, board.replace("_", "-"), qemu_cpu, why)


_V6M = "QEMU emulates no Cortex-M0/M0+; ARMv6-M code runs unchanged on the ARMv7-M Cortex-M3"
_V8MBASE = ("QEMU emulates no Cortex-M23; ARMv8-M Baseline code runs unchanged on the "
            "ARMv8-M Mainline Cortex-M33")
_M35P = "QEMU emulates no Cortex-M35P; it implements the same ARMv8-M Mainline ISA as the M33"
_V81M = ("QEMU emulates no {cpu}; its ARMv8.1-M code (MVE included) runs on the Cortex-M55, "
         "the one ARMv8.1-M CPU QEMU has")

BOARDS: dict[str, Board] = {
    "cortex-m0": _m("mps2_an385", "cortex-m3", _V6M),
    "cortex-m0plus": _m("mps2_an385", "cortex-m3", _V6M),
    "cortex-m3": _m("mps2_an385", "cortex-m3"),
    "cortex-m4": _m("mps2_an386", "cortex-m4"),
    "cortex-m7": _m("mps2_an500", "cortex-m7"),
    "cortex-m23": _m("mps2_an505", "cortex-m33", _V8MBASE),
    "cortex-m33": _m("mps2_an505", "cortex-m33"),
    "cortex-m35p": _m("mps2_an505", "cortex-m33", _M35P),
    "cortex-m52": _m("mps3_an547", "cortex-m55", _V81M.format(cpu="Cortex-M52")),
    "cortex-m55": _m("mps3_an547", "cortex-m55"),
    "cortex-m85": _m("mps3_an547", "cortex-m55", _V81M.format(cpu="Cortex-M85")),
    "cortex-a53": Board(None, "qemu-aarch64", "cortex-a53"),
    "cortex-a55": Board(None, "qemu-aarch64", "cortex-a76",
                        "QEMU 7.2 emulates no Cortex-A55; its ARMv8.2-A code runs on the "
                        "ARMv8.2-A Cortex-A76"),
    "cortex-a72": Board(None, "qemu-aarch64", "cortex-a72"),
    "cortex-a76": Board(None, "qemu-aarch64", "cortex-a76"),
    # QEMU 7.2 has no Cortex-A320 (ARMv9.2-A); "max" implements every feature it knows.
    "cortex-a320": Board(None, "qemu-aarch64", "max",
                         "QEMU 7.2 emulates no Cortex-A320; the build targets ARMv9-A "
                         "(gcc 12), which QEMU's 'max' CPU implements"),
}
