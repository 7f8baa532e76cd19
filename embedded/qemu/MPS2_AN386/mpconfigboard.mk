# MicroPython's QEMU port on the MPS2 AN386 image: a Cortex-M4 with its single-precision FPU,
# for the armv7emsp native kernels (hard-float ABI, like the firmware of real M4F/M7 boards).
# Built by embedded/build_micropython.sh --qemu with BOARD_DIR pointing here.
QEMU_ARCH = arm
QEMU_MACHINE = mps2-an386

CFLAGS += -mthumb -mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard
CFLAGS += -DQEMU_SOC_MPS2
CFLAGS += -DMICROPY_HW_MCU_NAME='"Cortex-M4F"'

LDSCRIPT = mcu/arm/mps2.ld

SRC_BOARD_O = shared/runtime/gchelper_native.o shared/runtime/gchelper_thumb2.o

MPY_CROSS_FLAGS += -march=armv7emsp
