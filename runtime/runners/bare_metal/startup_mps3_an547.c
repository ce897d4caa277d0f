/*
 * Start-up for the Arm MPS3 AN547 (Corstone-300: Cortex-M55 + Ethos-U55), as modelled by
 * QEMU's mps3-an547 and Arm's FVP. Programs are linked with rdimon (semihosting) and
 * -nostartfiles: rdimon's own crt0 trusts SYS_HEAPINFO, which QEMU answers with the ITCM
 * when the vectors live there, so this file does the start-up itself:
 *   enable the FPU/MVE, zero .bss, open the semihosting handles, run constructors,
 *   fetch the command line (SYS_GET_CMDLINE) and exit(main(argc, argv)).
 * .data needs no copy: the ELF loader (QEMU, FVP, debugger) places it in RAM directly.
 * Faults end the program through semihosting with status 99 so tests never hang.
 */
#include <stdint.h>
#include <stdlib.h>

#include "semihosting.h"

extern uint32_t __stack_top;
extern uint32_t __bss_start__;
extern uint32_t __bss_end__;
extern void initialise_monitor_handles(void);
extern void __libc_init_array(void);
extern int main(int argc, char** argv);

void Reset_Handler(void);
void ethosu_rt_reset(void);
void Default_Handler(void);
void _init(void);
void _fini(void);

#define WEAK_DEFAULT __attribute__((weak, alias("Default_Handler")))
void NMI_Handler(void) WEAK_DEFAULT;
void HardFault_Handler(void) WEAK_DEFAULT;
void MemManage_Handler(void) WEAK_DEFAULT;
void BusFault_Handler(void) WEAK_DEFAULT;
void UsageFault_Handler(void) WEAK_DEFAULT;
void SecureFault_Handler(void) WEAK_DEFAULT;
void SVC_Handler(void) WEAK_DEFAULT;
void DebugMon_Handler(void) WEAK_DEFAULT;
void PendSV_Handler(void) WEAK_DEFAULT;
void SysTick_Handler(void) WEAK_DEFAULT;
void NPU0_IRQHandler(void) WEAK_DEFAULT; /* Ethos-U55 on Corstone-300: IRQ 56 */

typedef void (*vector_t)(void);
#define NPU0_IRQ 56
#define NUM_IRQS 96

__attribute__((section(".vectors"), used)) const vector_t ethosu_rt_vectors[16 + NUM_IRQS] = {
    [0] = (vector_t)&__stack_top,
    [1] = Reset_Handler,
    [2] = NMI_Handler,
    [3] = HardFault_Handler,
    [4] = MemManage_Handler,
    [5] = BusFault_Handler,
    [6] = UsageFault_Handler,
    [7] = SecureFault_Handler,
    [8 ... 10] = Default_Handler,
    [11] = SVC_Handler,
    [12] = DebugMon_Handler,
    [13] = Default_Handler,
    [14] = PendSV_Handler,
    [15] = SysTick_Handler,
    [16 ... 16 + NPU0_IRQ - 1] = Default_Handler,
    [16 + NPU0_IRQ] = NPU0_IRQHandler,
    [16 + NPU0_IRQ + 1 ... 16 + NUM_IRQS - 1] = Default_Handler,
};

void Default_Handler(void) {
  semihosting_write0("fatal: unexpected exception or fault\n");
  semihosting_exit(99);
}

/* Runs before any C code: FP and MVE instructions fault until CP10/CP11 are enabled, and
 * the compiler may use them anywhere, so this must not be C. */
__attribute__((naked, noreturn)) void Reset_Handler(void) {
  __asm volatile(
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
      "ldr r0, =0xE000ED88\n" /* CPACR */
      "ldr r1, [r0]\n"
      "orr r1, r1, #0x00F00000\n" /* CP10, CP11: full access */
      "str r1, [r0]\n"
      "dsb\n"
      "isb\n"
#endif
      "b ethosu_rt_reset\n");
}

void ethosu_rt_reset(void) {
  for (volatile uint32_t* p = &__bss_start__; p < &__bss_end__; ++p) {
    *p = 0;
  }
  initialise_monitor_handles();
  __libc_init_array();
  static char* argv[SEMIHOSTING_MAX_ARGS + 1];
  const int argc = semihosting_command_line(argv, SEMIHOSTING_MAX_ARGS);
  exit(main(argc, argv));
}

/* Needed by __libc_init_array and C++ static destructors with -nostartfiles. */
void _init(void) {}
void _fini(void) {}
void* __dso_handle = 0;
