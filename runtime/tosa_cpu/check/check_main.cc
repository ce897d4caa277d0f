// tosa_cpu_check: bare-metal firmware that runs CPU graphs with expected outputs compiled in
// (a C file written by tests/cpu/test_isa_variants.py from the TOSA reference model) and
// compares byte for byte, on the target's own instruction set under QEMU. Prints one line
// per case and a summary; exits (semihosting) 0 when every case matches, 1 otherwise.
#include <stdint.h>
#include <string.h>

#include "semihosting.h"
#include "tosa_cpu/graph.h"

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

namespace {

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
  if (!ethosu_rt::ok(graph.run()) || !ethosu_rt::ok(graph.output(0, &out)) ||
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
  print(c.name, ": bit-exact\n");
  return true;
}

}  // namespace

int main() {
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
