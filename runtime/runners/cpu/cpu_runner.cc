// tosa_cpu_runner: runs a CPU artifact (pipeline/stages/cpu_graph.py) on the CPU with the
// TOSA kernel library, on Linux (--model F) or bare metal (the artifact compiled in as a C
// array, arguments through semihosting; the same source, ETHOSU_RT_MODEL_SYMBOL defined).
//
//   tosa_cpu_runner [--model F] [--input a.bin[,b.bin]] [--output out_prefix] [--float-io]
//                   [--num-executions N] [--dump-ops prefix] [--profile]
//
// Inputs are raw tensors in torch's layout and the artifact's dtype (zeros without --input);
// with --float-io they are float32, quantized with io_meta's scale and zero point, and the
// outputs are dequantized to float32. Output i goes to <out_prefix>-<i>.bin; its size and
// FNV-1a checksum are printed either way. --dump-ops runs one operator at a time and writes
// output j of operator k (the graph's own layout) to <prefix>-<k>-<j>.bin: how the build
// finds the first operator that differs from the TOSA reference model. --profile runs one
// operator at a time and prints each one's cost in ticks: on bare metal SysTick periods of
// the CPU clock (under QEMU -icount, a fixed number of instructions each), on Linux ns.
// Any failure prints one line and exits with status 1.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if !defined(ETHOSU_RT_MODEL_SYMBOL)
#include <sys/stat.h>
#include <unistd.h>
#endif

#include "cpu_model.h"
#include "ethosu_rt/check.h"
#include "ethosu_rt/quant.h"
#include "tosa_cpu/ops.h"

#if defined(ETHOSU_RT_MODEL_SYMBOL)
#define ETHOSU_RT_CAT_(a, b) a##b
#define ETHOSU_RT_CAT(a, b) ETHOSU_RT_CAT_(a, b)
extern "C" const uint8_t ETHOSU_RT_MODEL_SYMBOL[];
extern "C" const size_t ETHOSU_RT_CAT(ETHOSU_RT_MODEL_SYMBOL, _size);
#endif

namespace {

using ethosu_rt::Error;

#if defined(ETHOSU_RT_MODEL_SYMBOL)
// SysTick counts the CPU clock down through 24 bits; its interrupt counts the wraps.
volatile uint32_t g_systick_wraps = 0;
volatile uint32_t* const kSystCsr = reinterpret_cast<volatile uint32_t*>(0xE000E010u);
volatile uint32_t* const kSystRvr = reinterpret_cast<volatile uint32_t*>(0xE000E014u);
volatile uint32_t* const kSystCvr = reinterpret_cast<volatile uint32_t*>(0xE000E018u);
constexpr uint32_t kSystMask = 0xFFFFFFu;

void ticks_start() {
  *kSystRvr = kSystMask;
  *kSystCvr = 0;
  *kSystCsr = 7u;  // enable, interrupt on wrap, CPU clock
}

uint64_t ticks_now() {
  uint32_t wraps, value;
  do {
    wraps = g_systick_wraps;
    value = *kSystCvr;
  } while (wraps != g_systick_wraps);
  return (static_cast<uint64_t>(wraps) << 24) + (kSystMask - value);
}
#else
void ticks_start() {}

uint64_t ticks_now() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}
#endif

constexpr size_t kMaxIo = 16;

// The arena and the application's tensors. Bare metal: static buffers sized at link time for
// the model compiled in (no heap). Linux: heap buffers sized from the artifact at run time
// (the plan's arena, io_meta's tensors, the file), so no model outgrows a fixed limit.
#if defined(ETHOSU_RT_MODEL_SYMBOL)
alignas(16) uint8_t g_arena_static[ETHOSU_RT_ARENA_BYTES];
alignas(16) uint8_t g_io_static[ETHOSU_RT_IO_BYTES];
uint8_t* g_arena = g_arena_static;
size_t g_arena_size = sizeof(g_arena_static);
uint8_t* g_io = g_io_static;
size_t g_io_size = sizeof(g_io_static);
#else
uint8_t* g_arena = nullptr;
size_t g_arena_size = 0;
uint8_t* g_io = nullptr;
size_t g_io_size = 0;
uint8_t* g_model = nullptr;
#endif
size_t g_io_used = 0;

void log_line(const ethosu_rt::CheckFailure& failure, void* /*user*/) {
  char line[256];
  ethosu_rt::format_check(failure, line, sizeof(line));
  printf("tosa_cpu_runner: error: %s\n", line);
}

uint8_t* io_alloc(size_t bytes) {
  const size_t start = (g_io_used + 15u) & ~size_t{15};
  if (start > g_io_size || bytes > g_io_size - start) {
    printf("tosa_cpu_runner: error: IO staging needs %lu more bytes; ETHOSU_RT_IO_BYTES is %lu\n",
           static_cast<unsigned long>(bytes), static_cast<unsigned long>(g_io_size));
    return nullptr;
  }
  g_io_used = start + bytes;
  return g_io + start;
}

#if !defined(ETHOSU_RT_MODEL_SYMBOL)
size_t align16(size_t bytes) { return (bytes + 15u) & ~size_t{15}; }

// A heap buffer of `bytes` (16-byte aligned, zeroed lazily by the kernel), or one line naming
// `what` when the artifact asks for more than this machine's memory or malloc fails.
uint8_t* heap_alloc(size_t bytes, const char* what) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  using ull = unsigned long long;
  const ull memory =
      pages > 0 && page > 0 ? static_cast<ull>(pages) * static_cast<ull>(page) : ~0ull;
  if (bytes > memory || bytes > SIZE_MAX - 16u) {
    printf("tosa_cpu_runner: error: %s: bytes must be at most this machine's memory, %llu; "
           "got %llu\n", what, memory, static_cast<unsigned long long>(bytes));
    return nullptr;
  }
  void* buffer = aligned_alloc(16, align16(bytes > 0 ? bytes : 1));
  if (buffer == nullptr) {
    printf("tosa_cpu_runner: error: %s: %llu bytes must be allocatable; malloc failed\n", what,
           static_cast<unsigned long long>(bytes));
  }
  return static_cast<uint8_t*>(buffer);
}
#endif

// Linux: allocates the arena (the plan's) and the IO staging (io_meta's: per input and output
// the tensor and, with --float-io, its float32 values, as pipeline.artifact.io_staging_bytes).
bool size_buffers(ethosu_rt::CpuModel& model, bool float_io) {
#if defined(ETHOSU_RT_MODEL_SYMBOL)
  (void)model;
  (void)float_io;
  return true;
#else
  size_t io = 0;
  for (size_t k = 0; k < model.num_inputs() + model.num_outputs(); ++k) {
    ethosu_rt::TensorInfo info;
    const bool output = k >= model.num_inputs();
    const size_t index = output ? k - model.num_inputs() : k;
    if ((output ? model.output_info(index, &info) : model.input_info(index, &info)) !=
        Error::kOk) {
      return false;
    }
    const size_t values = float_io ? align16(info.element_count * sizeof(float)) : 0;
    io += align16(info.tensor_bytes) + values;
  }
  g_arena_size = model.arena_bytes();
  g_io_size = io;
  return (g_arena = heap_alloc(g_arena_size, "arena (the memory plan's)")) != nullptr &&
         (g_io = heap_alloc(g_io_size, "IO staging (io_meta's)")) != nullptr;
#endif
}

struct Options {
  const char* model = nullptr;
  char* inputs = nullptr;  // comma-separated, split in place
  const char* output_prefix = nullptr;
  const char* dump_prefix = nullptr;
  bool float_io = false;
  bool profile = false;
  long executions = 1;
};

bool parse_args(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    if (strcmp(flag, "--float-io") == 0) {
      o->float_io = true;
      continue;
    }
    if (strcmp(flag, "--profile") == 0) {
      o->profile = true;
      continue;
    }
    if (i + 1 >= argc) {
      printf("tosa_cpu_runner: error: %s must be followed by a value\n", flag);
      return false;
    }
    char* value = argv[++i];
    if (strcmp(flag, "--input") == 0) {
      o->inputs = value;
    } else if (strcmp(flag, "--output") == 0) {
      o->output_prefix = value;
    } else if (strcmp(flag, "--dump-ops") == 0) {
      o->dump_prefix = value;
#if !defined(ETHOSU_RT_MODEL_SYMBOL)
    } else if (strcmp(flag, "--model") == 0) {
      o->model = value;
#endif
    } else if (strcmp(flag, "--num-executions") == 0) {
      o->executions = strtol(value, nullptr, 10);
      if (o->executions < 1) {
        printf("tosa_cpu_runner: error: --num-executions must be >= 1; got '%s'\n", value);
        return false;
      }
    } else {
      printf("tosa_cpu_runner: error: unknown option '%s'\n", flag);
      return false;
    }
  }
  return true;
}

// Reads exactly `bytes` from `path` into `out`.
bool read_file(const char* path, uint8_t* out, size_t bytes, const char* what) {
  FILE* file = fopen(path, "rb");
  if (file == nullptr) {
    printf("tosa_cpu_runner: error: %s '%s' must be a readable file\n", what, path);
    return false;
  }
  const size_t got = fread(out, 1, bytes, file);
  const bool longer = fgetc(file) != EOF;
  fclose(file);
  if (got != bytes || longer) {
    printf("tosa_cpu_runner: error: %s '%s' must hold %lu bytes\n", what, path,
           static_cast<unsigned long>(bytes));
    return false;
  }
  return true;
}

bool write_file(const char* path, const void* data, size_t bytes) {
  FILE* file = fopen(path, "wb");
  const bool ok = file != nullptr && fwrite(data, 1, bytes, file) == bytes;
  if (file != nullptr) {
    fclose(file);
  }
  if (!ok) {
    printf("tosa_cpu_runner: error: output file '%s' must be writable\n", path);
  }
  return ok;
}

// The next name of a comma-separated list (null when the list is used up).
char* next_name(char** list) {
  char* name = *list;
  if (name == nullptr) {
    return nullptr;
  }
  char* comma = strchr(name, ',');
  *list = comma != nullptr ? comma + 1 : nullptr;
  if (comma != nullptr) {
    *comma = '\0';
  }
  return name;
}

// Input `index` in the application's dtype and torch layout (quantized from float32 files
// with --float-io), zeros without a file.
bool load_input(const ethosu_rt::TensorInfo& info, const Options& o, char** list, uint8_t** out) {
  uint8_t* tensor = io_alloc(info.tensor_bytes);
  if (tensor == nullptr) {
    return false;
  }
  memset(tensor, 0, info.tensor_bytes);
  *out = tensor;
  const char* name = next_name(list);
  if (name == nullptr) {
    return true;
  }
  if (!o.float_io) {
    return read_file(name, tensor, info.tensor_bytes, "input");
  }
  float* values = reinterpret_cast<float*>(io_alloc(info.element_count * sizeof(float)));
  return values != nullptr &&
         read_file(name, reinterpret_cast<uint8_t*>(values), info.element_count * sizeof(float),
                   "input") &&
         ethosu_rt::quantize(info, values, info.element_count, tensor, info.tensor_bytes) ==
             Error::kOk;
}

uint32_t fnv1a(const uint8_t* data, size_t size) {
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < size; ++i) {
    hash = (hash ^ data[i]) * 16777619u;
  }
  return hash;
}

bool save_output(ethosu_rt::CpuModel& model, size_t index, const Options& o) {
  ethosu_rt::TensorInfo info;
  uint8_t* tensor = nullptr;
  if (model.output_info(index, &info) != Error::kOk ||
      (tensor = io_alloc(info.tensor_bytes)) == nullptr ||
      model.get_output(index, tensor, info.tensor_bytes) != Error::kOk) {
    return false;
  }
  const void* data = tensor;
  size_t bytes = info.tensor_bytes;
  if (o.float_io) {
    float* values = reinterpret_cast<float*>(io_alloc(info.element_count * sizeof(float)));
    if (values == nullptr || ethosu_rt::dequantize(info, tensor, info.tensor_bytes, values,
                                                   info.element_count) != Error::kOk) {
      return false;
    }
    data = values;
    bytes = info.element_count * sizeof(float);
  }
  printf("output %lu '%s': %lu bytes, fnv1a 0x%08lx\n", static_cast<unsigned long>(index),
         info.name, static_cast<unsigned long>(bytes),
         static_cast<unsigned long>(fnv1a(static_cast<const uint8_t*>(data), bytes)));
  if (o.output_prefix == nullptr) {
    return true;
  }
  char path[256];
  snprintf(path, sizeof(path), "%s-%lu.bin", o.output_prefix, static_cast<unsigned long>(index));
  return write_file(path, data, bytes);
}

// Runs the graph one operator at a time, writing every operator's outputs.
bool run_dumping(ethosu_rt::CpuModel& model, const char* prefix) {
  tosa_cpu::Graph& graph = model.graph();
  for (size_t k = 0; k < graph.num_ops(); ++k) {
    if (graph.run_ops(k, 1) != Error::kOk) {
      printf("tosa_cpu_runner: error: operator %lu (%s) failed\n", static_cast<unsigned long>(k),
             tosa_cpu::op_name(graph.op_code(k)));
      return false;
    }
    tosa_cpu::Tensor t;
    for (size_t j = 0; graph.op_output(k, j, &t) == Error::kOk; ++j) {
      char path[256];
      snprintf(path, sizeof(path), "%s-%lu-%lu.bin", prefix, static_cast<unsigned long>(k),
               static_cast<unsigned long>(j));
      if (!write_file(path, t.data, t.bytes)) {
        return false;
      }
    }
  }
  return true;
}

// Ticks of a loop of exactly 2,000,000 instructions (1,000,000 x subs + bne): under QEMU
// -icount the ratio converts ticks to instructions whatever the board's clock.
uint64_t calibration_ticks() {
#if defined(ETHOSU_RT_MODEL_SYMBOL)
  uint32_t count = 1000000u;
  const uint64_t start = ticks_now();
  // GCC hands Thumb-1 (ARMv6-M) inline assembly over in divided syntax; the loop is unified.
  __asm volatile(".syntax unified\n1: subs %0, %0, #1\n bne 1b\n" : "+l"(count) : : "cc");
  return ticks_now() - start;
#else
  return 0;
#endif
}

// Runs the graph one operator at a time, printing each one's ticks and the total.
bool run_profiling(ethosu_rt::CpuModel& model) {
  tosa_cpu::Graph& graph = model.graph();
  printf("calibration: 2000000 instructions in %llu ticks\n",
         static_cast<unsigned long long>(calibration_ticks()));
  uint64_t total = 0;
  for (size_t k = 0; k < graph.num_ops(); ++k) {
    const uint64_t start = ticks_now();
    if (graph.run_ops(k, 1) != Error::kOk) {
      return false;
    }
    const uint64_t ticks = ticks_now() - start;
    total += ticks;
    printf("op %lu %s: %llu ticks\n", static_cast<unsigned long>(k),
           tosa_cpu::op_name(graph.op_code(k)), static_cast<unsigned long long>(ticks));
  }
  printf("total: %llu ticks\n", static_cast<unsigned long long>(total));
  return true;
}

bool load_model(const Options& o, const uint8_t** data, size_t* size) {
#if defined(ETHOSU_RT_MODEL_SYMBOL)
  (void)o;
  *data = ETHOSU_RT_MODEL_SYMBOL;
  *size = ETHOSU_RT_CAT(ETHOSU_RT_MODEL_SYMBOL, _size);
  return true;
#else
  if (o.model == nullptr) {
    printf("tosa_cpu_runner: error: --model must name the CPU artifact (model.cpu.bin)\n");
    return false;
  }
  FILE* file = fopen(o.model, "rb");
  struct stat found;
  if (file == nullptr || fstat(fileno(file), &found) != 0 || !S_ISREG(found.st_mode)) {
    printf("tosa_cpu_runner: error: model '%s' must be a readable file\n", o.model);
    if (file != nullptr) {
      fclose(file);
    }
    return false;
  }
  const off_t bytes = found.st_size;
  *size = static_cast<size_t>(bytes);
  char what[300];
  snprintf(what, sizeof(what), "model '%s'", o.model);
  g_model = heap_alloc(*size, what);
  const bool read = g_model != nullptr && fread(g_model, 1, *size, file) == *size;
  fclose(file);
  if (g_model != nullptr && !read) {
    printf("tosa_cpu_runner: error: model '%s' must be a readable file\n", o.model);
  }
  if (!read) {
    return false;
  }
  *data = g_model;
  return true;
#endif
}

int run(int argc, char** argv) {
  ethosu_rt::set_log_sink(log_line, nullptr);
  ticks_start();
  Options o;
  const uint8_t* artifact = nullptr;
  size_t artifact_size = 0;
  static ethosu_rt::CpuModel model;
  if (!parse_args(argc, argv, &o) || !load_model(o, &artifact, &artifact_size) ||
      model.open(artifact, artifact_size) != Error::kOk || !size_buffers(model, o.float_io) ||
      model.bind(g_arena, g_arena_size) != Error::kOk) {
    return 1;
  }
  printf("model: %lu operators, arena %lu of %lu bytes\n",
         static_cast<unsigned long>(model.graph().num_ops()),
         static_cast<unsigned long>(model.arena_bytes()), static_cast<unsigned long>(g_arena_size));
  if (model.num_inputs() > kMaxIo) {
    printf("tosa_cpu_runner: error: inputs must be at most %lu; got %lu\n",
           static_cast<unsigned long>(kMaxIo), static_cast<unsigned long>(model.num_inputs()));
    return 1;
  }
  uint8_t* inputs[kMaxIo] = {};
  char* list = o.inputs;
  for (size_t i = 0; i < model.num_inputs(); ++i) {
    ethosu_rt::TensorInfo info;
    if (model.input_info(i, &info) != Error::kOk || !load_input(info, o, &list, &inputs[i])) {
      return 1;
    }
  }
  for (long r = 0; r < o.executions; ++r) {
    // Inputs live in the arena, which the plan reuses: they go in before every run.
    for (size_t i = 0; i < model.num_inputs(); ++i) {
      ethosu_rt::TensorInfo info;
      if (model.input_info(i, &info) != Error::kOk ||
          model.set_input(i, inputs[i], info.tensor_bytes) != Error::kOk) {
        return 1;
      }
    }
    const clock_t start = clock();
    const bool ran = o.dump_prefix != nullptr ? run_dumping(model, o.dump_prefix)
                     : o.profile              ? run_profiling(model)
                                              : model.run() == Error::kOk;
    if (!ran) {
      return 1;
    }
    const unsigned long us =
        static_cast<unsigned long>((clock() - start) * 1000000.0 / CLOCKS_PER_SEC);
    printf("inference %ld: %lu us\n", r + 1, us);
  }
  for (size_t i = 0; i < model.num_outputs(); ++i) {
    if (!save_output(model, i, o)) {
      return 1;
    }
  }
  return 0;
}

}  // namespace

#if defined(ETHOSU_RT_MODEL_SYMBOL)
// Replaces the start-up's default handler (a fatal exit) for SysTick.
extern "C" void SysTick_Handler(void);
extern "C" void SysTick_Handler(void) { g_systick_wraps = g_systick_wraps + 1; }
#endif

int main(int argc, char** argv) { return run(argc, argv); }
