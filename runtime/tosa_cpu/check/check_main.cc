// tosa_cpu_check: bare-metal firmware that runs CPU graphs with expected outputs compiled in
// (a C file written by tests/cpu/test_isa_variants.py from the TOSA reference model) and
// compares byte for byte, on the target's own instruction set under QEMU. Prints one line
// per case (with the SysTick ticks its run took: under `qemu -icount shift=0` a fixed number
// of instructions per tick, so ticks compare kernel variants) and a summary; exits
// (semihosting) 0 when every case matches, 1 otherwise.
#include <stdint.h>
#include <string.h>

#include "semihosting.h"
#include "tosa_cpu/graph.h"
#include "tosa_cpu/ops.h"

extern "C" {
struct TosaCpuCheckCase {
  const char* name;
  const uint8_t* graph;
  uint32_t graph_bytes;
  const uint8_t* input;
  uint32_t input_bytes;
  const uint8_t* expected;
  uint32_t expected_bytes;
};
extern const TosaCpuCheckCase tosa_cpu_check_cases[];
extern const uint32_t tosa_cpu_check_count;
}

// SysTick, counting wraps of its 24-bit down-counter.
extern "C" void SysTick_Handler(void);
namespace {
volatile uint32_t systick_wraps = 0;
}  // namespace
extern "C" void SysTick_Handler(void) { systick_wraps = systick_wraps + 1; }

namespace {

volatile uint32_t* const kSystCsr = reinterpret_cast<volatile uint32_t*>(0xE000E010u);
volatile uint32_t* const kSystRvr = reinterpret_cast<volatile uint32_t*>(0xE000E014u);
volatile uint32_t* const kSystCvr = reinterpret_cast<volatile uint32_t*>(0xE000E018u);

void start_ticks() {
  *kSystRvr = 0xFFFFFFu;
  *kSystCvr = 0;
  systick_wraps = 0;
  *kSystCsr = 7u;  // enable, interrupt on wrap, processor clock
  while (*kSystCvr == 0) {
    // The counter reads 0 until its first reload from RVR.
  }
}

uint64_t ticks() {
  uint32_t wraps, value;
  do {
    wraps = systick_wraps;
    value = *kSystCvr;
  } while (wraps != systick_wraps);
  return (static_cast<uint64_t>(wraps) << 24) + (0xFFFFFFu - value);
}

alignas(16) uint8_t arena[TOSA_CPU_CHECK_ARENA_BYTES];

void print(const char* a, const char* b = "", const char* c = "") {
  semihosting_write0(a);
  semihosting_write0(b);
  semihosting_write0(c);
}

const char* number(uint32_t value, char* buffer) {
  char* p = buffer + 11;
  *p = '\0';
  do {
    *--p = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  return p;
}

// Runs the graph again one operator at a time and prints the ticks per operator type
// ("  CONV2D 1234"); each run_ops call also walks the records before its operator, a few
// ticks that the whole-graph figure does not have.
void profile(tosa_cpu::Graph& graph) {
  static uint64_t per_op[128];
  memset(per_op, 0, sizeof(per_op));
  for (size_t i = 0; i < graph.num_ops(); ++i) {
    const uint32_t op = graph.op_code(i);
    const uint64_t start = ticks();
    if (!ethosu_rt::ok(graph.run_ops(i, 1))) return;
    per_op[op < 128 ? op : 0] += ticks() - start;
  }
  for (uint32_t op = 0; op < 128; ++op) {
    if (per_op[op] == 0) continue;
    char buffer[12];
    const uint32_t shown = per_op[op] > 0xFFFFFFFFu ? 0xFFFFFFFFu : static_cast<uint32_t>(per_op[op]);
    print("  ", tosa_cpu::op_name(op), " ");
    print(number(shown, buffer), "\n");
  }
}

bool run_case(const TosaCpuCheckCase& c) {
  tosa_cpu::Graph graph;
  tosa_cpu::Tensor in, out;
  if (!ethosu_rt::ok(graph.open(c.graph, c.graph_bytes)) || graph.arena_bytes() > sizeof(arena) ||
      !ethosu_rt::ok(graph.bind(arena, sizeof(arena))) || !ethosu_rt::ok(graph.input(0, &in)) ||
      in.bytes != c.input_bytes) {
    print(c.name, ": the graph must open and fit the arena\n");
    return false;
  }
  memcpy(in.data, c.input, in.bytes);
  const uint64_t start = ticks();
  const bool ran = ethosu_rt::ok(graph.run());
  const uint64_t took = ticks() - start;
  if (!ran || !ethosu_rt::ok(graph.output(0, &out)) ||
      out.bytes != c.expected_bytes) {
    print(c.name, ": the graph must run\n");
    return false;
  }
  const uint8_t* got = static_cast<const uint8_t*>(out.data);
  for (uint32_t i = 0; i < out.bytes; ++i) {
    if (got[i] != c.expected[i]) {
      char buffer[12];
      print(c.name, ": MISMATCH at byte ", number(i, buffer));
      print("\n");
      return false;
    }
  }
  profile(graph);
  char buffer[12];
  const uint32_t shown = took > 0xFFFFFFFFu ? 0xFFFFFFFFu : static_cast<uint32_t>(took);
  print(c.name, ": bit-exact (", number(shown, buffer));
  print(" ticks)\n");
  return true;
}

}  // namespace

// Ticks of a loop of exactly 2,000,000 instructions (1,000,000 x {subs, bne}): under
// `qemu -icount` the instructions one tick stands for.
static uint32_t calibrate() {
  const uint64_t start = ticks();
  uint32_t count = 1000000;
  __asm volatile("1: subs %0, %0, #1\n bne 1b\n" : "+r"(count) : : "cc");
  return static_cast<uint32_t>(ticks() - start);
}

int main() {
  start_ticks();
  char c[12];
  print("calibration: ", number(calibrate(), c), " ticks per 2000000 instructions\n");
  uint32_t passed = 0;
  for (uint32_t i = 0; i < tosa_cpu_check_count; ++i) {
    passed += run_case(tosa_cpu_check_cases[i]) ? 1 : 0;
  }
  char a[12], b[12];
  print("tosa_cpu_check: kernels ", tosa_cpu::kernel_variant(), ": ");
  print(number(passed, a), "/", number(tosa_cpu_check_count, b));
  print(" cases bit-exact\n");
  return passed == tosa_cpu_check_count ? 0 : 1;
}
