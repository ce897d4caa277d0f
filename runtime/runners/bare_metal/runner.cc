// ethosu_runner.elf: bare-metal runner for Corstone-300 (MPS3 AN547) with the model
// artifact compiled in (a C array from pipeline/runtime/c_array.py).
//
// Arguments arrive through semihosting:
//   ethosu_runner.elf [--input a.bin[,b.bin]] [--output out_prefix] [--num-executions N]
// Inputs are raw tensors in torch's layout (zeros without --input); output i goes to
// <out_prefix>-<i>.bin on the host, or its size and FNV-1a checksum are printed.
// The exit status (semihosting SYS_EXIT) is 0 on success and 1 on any error.
// Built with ETHOSU_RT_SEQUENCE (a mixed NPU + CPU artifact, npu: {fallback: cpu}), it runs
// the sequence: NPU segments through the core driver (one prepared network each, sharing the
// NPU scratch), CPU segments with the TOSA kernel library; the border tensors and the CPU
// arena take the front of the tensor arena.
#include <ethosu_driver.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ethosu_rt/artifact.h"
#include "ethosu_rt/check.h"
#include "ethosu_rt/io.h"
#include "ethosu_rt/npu_cortex_m.h"
#if defined(ETHOSU_RT_SEQUENCE)
#include "ethosu_rt/sequence.h"
#include "sequence_runner.h"
#endif

#define ETHOSU_RT_CAT_(a, b) a##b
#define ETHOSU_RT_CAT(a, b) ETHOSU_RT_CAT_(a, b)

extern "C" const uint8_t ETHOSU_RT_MODEL_SYMBOL[];
extern "C" const size_t ETHOSU_RT_CAT(ETHOSU_RT_MODEL_SYMBOL, _size);

namespace {

using ethosu_rt::Error;

ethosu_driver g_driver;

// The scratch arena (region 1) and the fast scratch (region 2, in SRAM).
alignas(32) uint8_t g_arena[ETHOSU_RT_ARENA_BYTES] __attribute__((section(".bss.tensor_arena")));
#if ETHOSU_RT_FAST_SCRATCH_BYTES > 0
alignas(32) uint8_t g_fast[ETHOSU_RT_FAST_SCRATCH_BYTES]
    __attribute__((section(".bss.ethosu_fast_scratch")));
constexpr size_t kFastBytes = sizeof(g_fast);
uint8_t* fast_memory() { return g_fast; }
#else
constexpr size_t kFastBytes = 0;
uint8_t* fast_memory() { return nullptr; }
#endif

// Application tensors (inputs read from files, outputs before writing), bump-allocated.
alignas(16) uint8_t g_io[ETHOSU_RT_IO_BYTES];
size_t g_io_used = 0;

void log_line(const ethosu_rt::CheckFailure& failure, void* /*user*/) {
  char line[256];
  ethosu_rt::format_check(failure, line, sizeof(line));
  printf("ethosu_runner: error: %s\n", line);
}

uint8_t* io_alloc(size_t bytes) {
  const size_t start = (g_io_used + 15u) & ~size_t{15};
  if (bytes > sizeof(g_io) - start || start > sizeof(g_io)) {
    printf("ethosu_runner: error: IO staging needs %lu more bytes; ETHOSU_RT_IO_BYTES is %lu\n",
           static_cast<unsigned long>(bytes), static_cast<unsigned long>(sizeof(g_io)));
    return nullptr;
  }
  g_io_used = start + bytes;
  return g_io + start;
}

struct Options {
  char* inputs = nullptr;  // comma-separated, modified in place
  const char* output_prefix = nullptr;
  long executions = 1;
};

bool parse_args(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (value == nullptr) {
      printf("ethosu_runner: error: %s must be followed by a value\n", flag);
      return false;
    }
    ++i;
    if (strcmp(flag, "--input") == 0) {
      options->inputs = argv[i];
    } else if (strcmp(flag, "--output") == 0) {
      options->output_prefix = value;
    } else if (strcmp(flag, "--num-executions") == 0) {
      options->executions = strtol(value, nullptr, 10);
      if (options->executions < 1) {
        printf("ethosu_runner: error: --num-executions must be >= 1; got '%s'\n", value);
        return false;
      }
    } else {
      printf("ethosu_runner: error: unknown option '%s'\n", flag);
      return false;
    }
  }
  return true;
}

// Reads input `index` from the next name in `list` into NPU element order.
bool load_input(const ethosu_rt::TensorInfo& info, char** list, uint8_t** out) {
  uint8_t* npu = io_alloc(info.tensor_bytes);
  if (npu == nullptr) {
    return false;
  }
  memset(npu, 0, info.tensor_bytes);
  *out = npu;
  if (*list == nullptr) {
    return true;
  }
  char* name = *list;
  char* comma = strchr(name, ',');
  *list = comma != nullptr ? comma + 1 : nullptr;
  if (comma != nullptr) {
    *comma = '\0';
  }
  uint8_t* torch = io_alloc(info.tensor_bytes);
  FILE* file = fopen(name, "rb");
  if (torch == nullptr || file == nullptr) {
    printf("ethosu_runner: error: input '%s' must be a readable file\n", name);
    return false;
  }
  const size_t got = fread(torch, 1, info.tensor_bytes, file);
  const bool longer = fgetc(file) != EOF;
  fclose(file);
  if (got != info.tensor_bytes || longer) {
    printf("ethosu_runner: error: input '%s' must hold %lu bytes (tensor '%s')\n", name,
           static_cast<unsigned long>(info.tensor_bytes), info.name);
    return false;
  }
  return ethosu_rt::to_npu_order(info, torch, npu, info.tensor_bytes) == Error::kOk;
}

uint32_t fnv1a(const uint8_t* data, size_t size) {
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < size; ++i) {
    hash = (hash ^ data[i]) * 16777619u;
  }
  return hash;
}

bool save_output(const ethosu_rt::Model& model, const ethosu_rt::Regions& regions, size_t index,
                 const char* prefix) {
  ethosu_rt::TensorInfo info;
  if (ethosu_rt::get_output(model, index, &info) != Error::kOk) {
    return false;
  }
  uint8_t* npu = io_alloc(info.tensor_bytes);
  uint8_t* torch = io_alloc(info.tensor_bytes);
  if (npu == nullptr || torch == nullptr ||
      ethosu_rt::copy_output(model, regions, index, npu, info.tensor_bytes) != Error::kOk ||
      ethosu_rt::from_npu_order(info, npu, torch, info.tensor_bytes) != Error::kOk) {
    return false;
  }
  printf("output %lu '%s': %lu bytes, fnv1a 0x%08lx\n", static_cast<unsigned long>(index),
         info.name, static_cast<unsigned long>(info.tensor_bytes),
         static_cast<unsigned long>(fnv1a(torch, info.tensor_bytes)));
  if (prefix == nullptr) {
    return true;
  }
  char path[256];
  snprintf(path, sizeof(path), "%s-%lu.bin", prefix, static_cast<unsigned long>(index));
  FILE* file = fopen(path, "wb");
  const bool ok = file != nullptr && fwrite(torch, 1, info.tensor_bytes, file) == info.tensor_bytes;
  if (file != nullptr) {
    fclose(file);
  }
  if (!ok) {
    printf("ethosu_runner: error: output file '%s' must be writable\n", path);
  }
  return ok;
}

#if defined(ETHOSU_RT_SEQUENCE)
// The core driver for the NPU segments: one prepared network each, all on one scratch.
class CortexMSegments final : public ethosu_rt::NpuSegments {
 public:
  void set_memory(const ethosu_rt::CortexMMemory& memory) { memory_ = memory; }
  Error prepare(size_t segment, const ethosu_rt::Model& model) override {
    return npus_[segment].prepare(model, memory_);
  }
  const ethosu_rt::Regions& regions(size_t segment) const override {
    return npus_[segment].regions();
  }
  Error invoke(size_t segment) override { return npus_[segment].invoke(); }

 private:
  ethosu_rt::CortexMMemory memory_ = {};
  ethosu_rt::CortexMNpu npus_[ethosu_rt::kMaxSegments];
};

ethosu_rt::SequenceRunner g_sequence;
CortexMSegments g_segments;

int run_sequence(const Options& options) {
  ethosu_rt::SequenceRunner& runner = g_sequence;
  if (runner.open(ETHOSU_RT_MODEL_SYMBOL, ETHOSU_RT_CAT(ETHOSU_RT_MODEL_SYMBOL, _size)) !=
      Error::kOk) {
    return 1;
  }
  // The front of the arena: border tensors and the CPU arena; the rest: the NPU scratch.
  const size_t front = (runner.arena_bytes() + 31u) & ~size_t{31};
  if (front > sizeof(g_arena) || runner.bind(g_arena, runner.arena_bytes()) != Error::kOk) {
    printf("ethosu_runner: error: the sequence needs %lu arena bytes; ETHOSU_RT_ARENA_BYTES "
           "is %lu\n", static_cast<unsigned long>(front),
           static_cast<unsigned long>(sizeof(g_arena)));
    return 1;
  }
  const ethosu_rt::Sequence& sequence = runner.sequence();
  printf("sequence: %lu segments (", static_cast<unsigned long>(sequence.num_segments));
  for (size_t k = 0; k < sequence.num_segments; ++k) {
    const bool cpu = sequence.segments[k].kind == ethosu_rt::SegmentKind::kCpu;
    printf("%s%s", k ? ", " : "", cpu ? "CPU" : "NPU");
  }
  printf("), arena %lu bytes\n", static_cast<unsigned long>(runner.arena_bytes()));
  CortexMSegments& npu = g_segments;
  npu.set_memory({g_arena + front, sizeof(g_arena) - front, nullptr, 0, nullptr, 0,
                  fast_memory(), kFastBytes});
  if (runner.prepare(npu) != Error::kOk) {
    return 1;
  }
  char* list = options.inputs;
  for (size_t i = 0; i < runner.num_inputs(); ++i) {
    ethosu_rt::TensorInfo info;
    uint8_t* npu_order = nullptr;
    uint8_t* torch = nullptr;
    if (runner.input_info(i, &info) != Error::kOk || !load_input(info, &list, &npu_order) ||
        (torch = io_alloc(info.tensor_bytes)) == nullptr ||
        ethosu_rt::from_npu_order(info, npu_order, torch, info.tensor_bytes) != Error::kOk ||
        runner.set_input(i, torch, info.tensor_bytes) != Error::kOk) {
      return 1;
    }
  }
  for (long run_index = 0; run_index < options.executions; ++run_index) {
    const clock_t start = clock();
    if (runner.run(npu) != Error::kOk) {
      return 1;
    }
    const unsigned long ms = static_cast<unsigned long>((clock() - start) * 1000 / CLOCKS_PER_SEC);
    printf("inference %ld: %lu ms\n", run_index + 1, ms);
  }
  for (size_t i = 0; i < runner.num_outputs(); ++i) {
    ethosu_rt::TensorInfo info;
    uint8_t* torch = nullptr;
    if (runner.output_info(i, &info) != Error::kOk ||
        (torch = io_alloc(info.tensor_bytes)) == nullptr ||
        runner.get_output(i, torch, info.tensor_bytes) != Error::kOk) {
      return 1;
    }
    printf("output %lu '%s': %lu bytes, fnv1a 0x%08lx\n", static_cast<unsigned long>(i),
           info.name, static_cast<unsigned long>(info.tensor_bytes),
           static_cast<unsigned long>(fnv1a(torch, info.tensor_bytes)));
    if (options.output_prefix != nullptr) {
      char path[256];
      snprintf(path, sizeof(path), "%s-%lu.bin", options.output_prefix,
               static_cast<unsigned long>(i));
      FILE* file = fopen(path, "wb");
      const bool ok =
          file != nullptr && fwrite(torch, 1, info.tensor_bytes, file) == info.tensor_bytes;
      if (file != nullptr) {
        fclose(file);
      }
      if (!ok) {
        printf("ethosu_runner: error: output file '%s' must be writable\n", path);
        return 1;
      }
    }
  }
  return 0;
}
#endif

void enable_npu_irq() {
  volatile uint32_t* nvic_iser = reinterpret_cast<volatile uint32_t*>(0xE000E100u);
  nvic_iser[ETHOSU_RT_NPU_IRQ / 32] = 1u << (ETHOSU_RT_NPU_IRQ % 32);
}

int run(int argc, char** argv) {
  ethosu_rt::set_log_sink(log_line, nullptr);
  Options options;
  if (!parse_args(argc, argv, &options)) {
    return 1;
  }
  void* npu_registers = reinterpret_cast<void*>(static_cast<uintptr_t>(ETHOSU_RT_NPU_BASE));
  if (ethosu_init(&g_driver, npu_registers, fast_memory(), kFastBytes, 1, 1) != 0) {
    printf("ethosu_runner: error: ethosu_init must return 0 for the NPU at 0x%08lx\n",
           static_cast<unsigned long>(ETHOSU_RT_NPU_BASE));
    return 1;
  }
  enable_npu_irq();
#if defined(ETHOSU_RT_SEQUENCE)
  return run_sequence(options);
#endif

  ethosu_rt::Model model;
  if (ethosu_rt::parse_artifact(ETHOSU_RT_MODEL_SYMBOL,
                                ETHOSU_RT_CAT(ETHOSU_RT_MODEL_SYMBOL, _size),
                                &model) != Error::kOk) {
    return 1;
  }
  ethosu_rt::CortexMNpu npu;
  const ethosu_rt::CortexMMemory memory = {g_arena, sizeof(g_arena), nullptr,   0, nullptr,
                                           0,       fast_memory(),   kFastBytes};
  if (npu.prepare(model, memory) != Error::kOk) {
    return 1;
  }
  uint8_t* inputs[16] = {};
  if (model.num_inputs > 16) {
    printf("ethosu_runner: error: inputs must be at most 16; got %lu\n",
           static_cast<unsigned long>(model.num_inputs));
    return 1;
  }
  char* list = options.inputs;
  for (size_t i = 0; i < model.num_inputs; ++i) {
    ethosu_rt::TensorInfo info;
    if (ethosu_rt::get_input(model, i, &info) != Error::kOk ||
        !load_input(info, &list, &inputs[i])) {
      return 1;
    }
  }
  for (long run_index = 0; run_index < options.executions; ++run_index) {
    // Inputs and outputs may share scratch, so the inputs go in before every run.
    for (size_t i = 0; i < model.num_inputs; ++i) {
      ethosu_rt::TensorInfo info;
      if (ethosu_rt::get_input(model, i, &info) != Error::kOk ||
          ethosu_rt::copy_input(model, npu.regions(), i, inputs[i], info.tensor_bytes) !=
              Error::kOk) {
        return 1;
      }
    }
    const clock_t start = clock();
    if (npu.invoke() != Error::kOk) {
      return 1;
    }
    const unsigned long ms = static_cast<unsigned long>((clock() - start) * 1000 / CLOCKS_PER_SEC);
    printf("inference %ld: %lu ms\n", run_index + 1, ms);
  }
  for (size_t i = 0; i < model.num_outputs; ++i) {
    if (!save_output(model, npu.regions(), i, options.output_prefix)) {
      return 1;
    }
  }
  return 0;
}

}  // namespace

// The NPU interrupt (vector 16 + ETHOSU_RT_NPU_IRQ in startup_mps3_an547.c) goes to the driver.
extern "C" void NPU0_IRQHandler(void);
extern "C" void NPU0_IRQHandler(void) { ethosu_irq_handler(&g_driver); }

int main(int argc, char** argv) { return run(argc, argv); }
