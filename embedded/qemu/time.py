# `time` for MicroPython's QEMU port on the MPS2 images, which is built without one
# ruff: noqa: A005 - it stands in for MicroPython's own time module on that board
# (MICROPY_PY_TIME=0): ticks from the board's CMSDK APB timer 0, a 32-bit down-counter at
# 25 MHz, so it wraps after 171 s of virtual time. Under `qemu-system-arm -icount shift=0`
# one instruction takes 1 ns, so a tick is 40 instructions (ember.export.qemu counts them).
# A real board has its own `time`; this file goes only into the emulated boards' flash.
import machine

_T = 0x40000000  # CTRL, VALUE, RELOAD
machine.mem32[_T + 8] = 0xFFFFFFFF
machine.mem32[_T + 4] = 0xFFFFFFFF
machine.mem32[_T] = 1  # enable
TICKS_PER_US = 25


def ticks_cpu():
    return 0xFFFFFFFF - machine.mem32[_T + 4]


def ticks_us():
    return ticks_cpu() // TICKS_PER_US


def ticks_ms():
    return ticks_cpu() // (1000 * TICKS_PER_US)


def ticks_diff(a, b):
    return a - b


def ticks_add(a, d):
    return a + d
