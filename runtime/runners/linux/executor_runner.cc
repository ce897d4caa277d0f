// ethosu_runner: runs a model artifact on an Ethos-U NPU through the Linux DRM accel
// driver, in the manner of ExecuTorch's executor_runner.
//
//   ethosu_runner --model model.bin [--input a.bin[,b.bin]] [--output out_prefix]
//                 [--device /dev/accel/accel0] [--num-executions N] [--timeout-ms T]
//
// Inputs are raw tensors in torch's layout and dtype (zeros when --input is absent);
// output i is written to <out_prefix>-<i>.bin. Each inference prints its wall time.
// A sequence artifact (npu: {fallback: cpu}) runs its NPU segments on the NPU, each one a
// network prepared on the device, and its CPU segments with the TOSA kernel library.
// Any failure prints one line to stderr and exits with a non-zero status.
//
// Built with -DETHOSU_RT_LINUX_DRIVER=ethosu-driver-stack, it also drives the NPU through Arm's
// Ethos-U Linux driver stack (the default there):
//   [--driver accel|ethosu-driver-stack] [--device /dev/ethosu0] [--pmu-events e0[,e1...]]
// and prints the NPU cycles of each inference (and the count of each PMU event asked for).
// Without it, the runner is the DRM accel one above, unchanged.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ethosu_rt/artifact.h"
#include "ethosu_rt/check.h"
#include "ethosu_rt/io.h"
#include "ethosu_rt/linux_sys.h"
#include "ethosu_rt/npu_drm.h"
#include "ethosu_rt/sequence.h"
#include "sequence_runner.h"
#ifdef ETHOSU_RT_WITH_DRIVER_STACK
#include "ethosu_rt/npu_driver_stack.h"
#endif

namespace {

using ethosu_rt::Error;

// A failure already reported on stderr (by the log sink or by fail()).
struct Reported : std::runtime_error {
  Reported() : std::runtime_error("reported") {}
};

[[noreturn]] void fail(const std::string& message) {
  fprintf(stderr, "ethosu_runner: error: %s\n", message.c_str());
  throw Reported();
}

void check(Error error) {
  if (error != Error::kOk) {
    throw Reported();  // the check macro already printed the one line
  }
}

void log_to_stderr(const ethosu_rt::CheckFailure& failure, void* /*user*/) {
  char line[512];
  ethosu_rt::format_check(failure, line, sizeof(line));
  fprintf(stderr, "ethosu_runner: error: %s\n", line);
}

struct Options {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_prefix;
  std::string device = "/dev/accel/accel0";
  long executions = 1;
  long timeout_ms = 60000;
#ifdef ETHOSU_RT_WITH_DRIVER_STACK
  std::string driver = "ethosu-driver-stack";
  bool device_given = false;
  std::vector<uint32_t> pmu_events;
#endif
};

#ifdef ETHOSU_RT_WITH_DRIVER_STACK
const char kUsage[] =
    "usage: ethosu_runner --model F [--input a.bin[,b.bin]] [--output out_prefix]\n"
    "                     [--driver ethosu-driver-stack|accel] [--device D]\n"
    "                     [--num-executions N] [--timeout-ms T] [--pmu-events e0[,e1...]]\n"
    "  --device defaults to /dev/ethosu0 (ethosu-driver-stack) or /dev/accel/accel0 (accel);\n"
    "  --pmu-events (ethosu-driver-stack): Ethos-U PMU event numbers to count.\n";
#else
const char kUsage[] =
    "usage: ethosu_runner --model F [--input a.bin[,b.bin]] [--output out_prefix]\n"
    "                     [--device /dev/accel/accel0] [--num-executions N] [--timeout-ms T]\n";
#endif

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return parts;
}

long parse_positive(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long value = strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || value < 1) {
    fail(flag + " must be a positive integer; got '" + text + "'");
  }
  return value;
}

#ifdef ETHOSU_RT_WITH_DRIVER_STACK
// "--pmu-events 0x22,48": event numbers, decimal or 0x-hex, at most ethosu_rt::kMaxPmuEvents.
std::vector<uint32_t> parse_events(const std::string& flag, const std::string& text) {
  std::vector<uint32_t> events;
  for (const std::string& part : split(text, ',')) {
    char* end = nullptr;
    errno = 0;
    const unsigned long value = strtoul(part.c_str(), &end, 0);
    if (errno != 0 || part.empty() || part[0] == '-' || *end != '\0' || value > 0xFFFFFFFFul) {
      fail(flag + " must be a comma-separated list of PMU event numbers; got '" + text + "'");
    }
    events.push_back(static_cast<uint32_t>(value));
  }
  if (events.size() > ethosu_rt::kMaxPmuEvents) {
    fail(flag + " must list at most " + std::to_string(ethosu_rt::kMaxPmuEvents) +
         " events; got " + std::to_string(events.size()));
  }
  return events;
}
#endif

Options parse_args(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      fputs(kUsage, stdout);
      exit(0);
    }
    if (i + 1 >= argc) {
      fail(flag + " must be followed by a value (or is unknown); see --help");
    }
    const std::string value = argv[++i];
    if (flag == "--model") {
      options.model = value;
    } else if (flag == "--input") {
      options.inputs = split(value, ',');
    } else if (flag == "--output") {
      options.output_prefix = value;
    } else if (flag == "--device") {
      options.device = value;
#ifdef ETHOSU_RT_WITH_DRIVER_STACK
      options.device_given = true;
    } else if (flag == "--driver") {
      if (value != "accel" && value != "ethosu-driver-stack") {
        fail("--driver must be accel or ethosu-driver-stack; got '" + value + "'");
      }
      options.driver = value;
    } else if (flag == "--pmu-events") {
      options.pmu_events = parse_events(flag, value);
#endif
    } else if (flag == "--num-executions") {
      options.executions = parse_positive(flag, value);
    } else if (flag == "--timeout-ms") {
      options.timeout_ms = parse_positive(flag, value);
    } else {
      fail("unknown option '" + flag + "'; see --help");
    }
  }
  if (options.model.empty()) {
    fail("--model must be given; see --help");
  }
#ifdef ETHOSU_RT_WITH_DRIVER_STACK
  if (options.driver == "ethosu-driver-stack" && !options.device_given) {
    options.device = ethosu_rt::kDriverStackDevice;
  }
  if (options.driver == "accel" && !options.pmu_events.empty()) {
    fail("--pmu-events must be used with --driver ethosu-driver-stack; got --driver accel");
  }
#endif
  return options;
}

// File contents in 16-byte aligned memory, as the artifact parser requires.
struct AlignedBytes {
  std::unique_ptr<uint8_t[]> storage;
  uint8_t* data = nullptr;
  size_t size = 0;
};

AlignedBytes read_file(const std::string& path, const char* what) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) {
    fail(std::string(what) + " '" + path + "' must be a readable file; got " + strerror(errno));
  }
  AlignedBytes bytes;
  bytes.size = static_cast<size_t>(file.tellg());
  bytes.storage.reset(new uint8_t[bytes.size + 16]);
  const uintptr_t address = reinterpret_cast<uintptr_t>(bytes.storage.get());
  bytes.data = bytes.storage.get() + ((16 - address % 16) % 16);
  file.seekg(0);
  file.read(reinterpret_cast<char*>(bytes.data), static_cast<std::streamsize>(bytes.size));
  if (!file) {
    fail(std::string("could not read ") + what + " '" + path + "'");
  }
  return bytes;
}

// Input tensors in the NPU's element order, ready for copy_input().
std::vector<std::vector<uint8_t>> load_inputs(const ethosu_rt::Model& model,
                                              const Options& options) {
  if (!options.inputs.empty() && options.inputs.size() != model.num_inputs) {
    fail("--input must list " + std::to_string(model.num_inputs) + " file(s); got " +
         std::to_string(options.inputs.size()));
  }
  std::vector<std::vector<uint8_t>> tensors;
  for (size_t i = 0; i < model.num_inputs; ++i) {
    ethosu_rt::TensorInfo info;
    check(ethosu_rt::get_input(model, i, &info));
    std::vector<uint8_t> npu(info.tensor_bytes, 0);
    if (!options.inputs.empty()) {
      AlignedBytes file = read_file(options.inputs[i], "input");
      if (file.size != info.tensor_bytes) {
        fail("input " + std::to_string(i) + " '" + options.inputs[i] + "' must hold " +
             std::to_string(info.tensor_bytes) + " bytes (" + ethosu_rt::dtype_name(info.dtype) +
             " tensor '" + info.name + "'); got " + std::to_string(file.size));
      }
      check(ethosu_rt::to_npu_order(info, file.data, npu.data(), npu.size()));
    }
    tensors.push_back(std::move(npu));
  }
  return tensors;
}

void write_outputs(const ethosu_rt::Model& model, const ethosu_rt::Regions& regions,
                   const std::string& prefix) {
  for (size_t i = 0; i < model.num_outputs; ++i) {
    ethosu_rt::TensorInfo info;
    check(ethosu_rt::get_output(model, i, &info));
    std::vector<uint8_t> npu(info.tensor_bytes);
    std::vector<uint8_t> torch(info.tensor_bytes);
    check(ethosu_rt::copy_output(model, regions, i, npu.data(), npu.size()));
    check(ethosu_rt::from_npu_order(info, npu.data(), torch.data(), torch.size()));
    if (prefix.empty()) {
      continue;
    }
    const std::string path = prefix + "-" + std::to_string(i) + ".bin";
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(torch.data()),
               static_cast<std::streamsize>(torch.size()));
    if (!file) {
      fail("output file '" + path + "' must be writable");
    }
    printf("output %zu '%s': %zu bytes -> %s\n", i, info.name, torch.size(), path.c_str());
  }
}

double now_ms() {
  timespec t = {};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// Linux direct drive for the NPU segments of a sequence: one prepared network each.
class DrmSegments final : public ethosu_rt::NpuSegments {
 public:
  DrmSegments(const std::string& device, int64_t timeout_ns)
      : device_(device), timeout_ns_(timeout_ns) {}
  Error prepare(size_t segment, const ethosu_rt::Model& model) override {
    npus_[segment].reset(new ethosu_rt::DrmNpu(ethosu_rt::real_linux_sys()));
    ETHOSU_RT_TRY(npus_[segment]->open(device_.c_str()));
    return npus_[segment]->prepare(model);
  }
  const ethosu_rt::Regions& regions(size_t segment) const override {
    return npus_[segment]->regions();
  }
  Error invoke(size_t segment) override { return npus_[segment]->invoke(timeout_ns_); }

 private:
  std::string device_;
  int64_t timeout_ns_;
  std::unique_ptr<ethosu_rt::DrmNpu> npus_[ethosu_rt::kMaxSegments];
};

#ifdef ETHOSU_RT_WITH_DRIVER_STACK
// The driver stack for the NPU segments of a sequence: one prepared network each.
class DriverStackSegments final : public ethosu_rt::NpuSegments {
 public:
  DriverStackSegments(const Options& options) : options_(options) {}
  Error prepare(size_t segment, const ethosu_rt::Model& model) override {
    npus_[segment].reset(new ethosu_rt::DriverStackNpu());
    ETHOSU_RT_TRY(npus_[segment]->open(options_.device.c_str()));
    ETHOSU_RT_TRY(npus_[segment]->set_pmu(pmu_config(options_)));
    return npus_[segment]->prepare(model);
  }
  const ethosu_rt::Regions& regions(size_t segment) const override {
    return npus_[segment]->regions();
  }
  Error invoke(size_t segment) override {
    ETHOSU_RT_TRY(npus_[segment]->invoke(static_cast<int64_t>(options_.timeout_ms) * 1000000));
    const ethosu_rt::PmuCounts& counts = npus_[segment]->pmu_counts();
    if (counts.has_cycles) {
      printf("segment %zu: %llu NPU cycles\n", segment,
             static_cast<unsigned long long>(counts.cycles));
    }
    return Error::kOk;
  }
  static ethosu_rt::PmuConfig pmu_config(const Options& options) {
    ethosu_rt::PmuConfig pmu = {};
    for (size_t i = 0; i < options.pmu_events.size(); ++i) {
      pmu.events[i] = options.pmu_events[i];
    }
    pmu.num_events = options.pmu_events.size();
    pmu.cycle_counter = true;  // cycles are always printed when the driver reports them
    return pmu;
  }

 private:
  const Options& options_;
  std::unique_ptr<ethosu_rt::DriverStackNpu> npus_[ethosu_rt::kMaxSegments];
};
#endif

int run_sequence(const Options& options, const AlignedBytes& artifact) {
  std::unique_ptr<ethosu_rt::SequenceRunner> runner(new ethosu_rt::SequenceRunner());
  check(runner->open(artifact.data, artifact.size));
  const ethosu_rt::Sequence& sequence = runner->sequence();
  printf("sequence: %zu segments (", sequence.num_segments);
  for (size_t k = 0; k < sequence.num_segments; ++k) {
    const bool cpu = sequence.segments[k].kind == ethosu_rt::SegmentKind::kCpu;
    printf("%s%s", k ? ", " : "", cpu ? "CPU" : "NPU");
  }
  printf("), arena %zu bytes\n", runner->arena_bytes());
  if (!options.inputs.empty() && options.inputs.size() != runner->num_inputs()) {
    fail("--input must list " + std::to_string(runner->num_inputs()) + " file(s); got " +
         std::to_string(options.inputs.size()));
  }
  AlignedBytes arena;
  arena.size = runner->arena_bytes();
  arena.storage.reset(new uint8_t[arena.size + 16]());
  const uintptr_t address = reinterpret_cast<uintptr_t>(arena.storage.get());
  arena.data = arena.storage.get() + ((16 - address % 16) % 16);
  check(runner->bind(arena.data, arena.size));
  for (size_t i = 0; i < runner->num_inputs(); ++i) {
    ethosu_rt::TensorInfo info;
    check(runner->input_info(i, &info));
    std::vector<uint8_t> zeros(info.tensor_bytes, 0);
    if (options.inputs.empty()) {
      check(runner->set_input(i, zeros.data(), zeros.size()));
      continue;
    }
    AlignedBytes file = read_file(options.inputs[i], "input");
    if (file.size != info.tensor_bytes) {
      fail("input " + std::to_string(i) + " '" + options.inputs[i] + "' must hold " +
           std::to_string(info.tensor_bytes) + " bytes (" + ethosu_rt::dtype_name(info.dtype) +
           " tensor '" + info.name + "'); got " + std::to_string(file.size));
    }
    check(runner->set_input(i, file.data, file.size));
  }
#ifdef ETHOSU_RT_WITH_DRIVER_STACK
  DrmSegments drm(options.device, static_cast<int64_t>(options.timeout_ms) * 1000000);
  DriverStackSegments stack(options);
  ethosu_rt::NpuSegments& npu = options.driver == "ethosu-driver-stack"
                                    ? static_cast<ethosu_rt::NpuSegments&>(stack)
                                    : static_cast<ethosu_rt::NpuSegments&>(drm);
#else
  DrmSegments npu(options.device, static_cast<int64_t>(options.timeout_ms) * 1000000);
#endif
  check(runner->prepare(npu));
  for (long run_index = 0; run_index < options.executions; ++run_index) {
    const double start = now_ms();
    check(runner->run(npu));
    printf("inference %ld: %.3f ms\n", run_index + 1, now_ms() - start);
  }
  for (size_t i = 0; i < runner->num_outputs() && !options.output_prefix.empty(); ++i) {
    ethosu_rt::TensorInfo info;
    check(runner->output_info(i, &info));
    std::vector<uint8_t> torch(info.tensor_bytes);
    check(runner->get_output(i, torch.data(), torch.size()));
    const std::string path = options.output_prefix + "-" + std::to_string(i) + ".bin";
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(torch.data()),
               static_cast<std::streamsize>(torch.size()));
    if (!file) {
      fail("output file '" + path + "' must be writable");
    }
    printf("output %zu '%s': %zu bytes -> %s\n", i, info.name, torch.size(), path.c_str());
  }
  return 0;
}

#ifdef ETHOSU_RT_WITH_DRIVER_STACK
int run_driver_stack(const Options& options, const ethosu_rt::Model& model,
                     const std::vector<std::vector<uint8_t>>& inputs) {
  ethosu_rt::DriverStackNpu npu;
  check(npu.open(options.device.c_str()));
  check(npu.set_pmu(DriverStackSegments::pmu_config(options)));
  check(npu.prepare(model));
  const int64_t timeout_ns = static_cast<int64_t>(options.timeout_ms) * 1000000;
  for (long run_index = 0; run_index < options.executions; ++run_index) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      check(ethosu_rt::copy_input(model, npu.regions(), i, inputs[i].data(), inputs[i].size()));
    }
    const double start = now_ms();
    check(npu.invoke(timeout_ns));
    const double elapsed = now_ms() - start;
    const ethosu_rt::PmuCounts& counts = npu.pmu_counts();
    if (counts.has_cycles) {
      printf("inference %ld: %.3f ms, %llu NPU cycles\n", run_index + 1, elapsed,
             static_cast<unsigned long long>(counts.cycles));
    } else {
      printf("inference %ld: %.3f ms\n", run_index + 1, elapsed);
    }
    for (size_t e = 0; e < counts.num_events; ++e) {
      printf("  pmu event %u: %u\n", static_cast<unsigned>(options.pmu_events[e]),
             static_cast<unsigned>(counts.events[e]));
    }
  }
  write_outputs(model, npu.regions(), options.output_prefix);
  return 0;
}
#endif

int run(int argc, char** argv) {
  ethosu_rt::set_log_sink(log_to_stderr, nullptr);
  const Options options = parse_args(argc, argv);
  AlignedBytes artifact = read_file(options.model, "model");
  if (ethosu_rt::is_sequence(artifact.data, artifact.size)) {
    return run_sequence(options, artifact);
  }
  ethosu_rt::Model model;
  check(ethosu_rt::parse_artifact(artifact.data, artifact.size, &model));
  const auto inputs = load_inputs(model, options);
#ifdef ETHOSU_RT_WITH_DRIVER_STACK
  if (options.driver == "ethosu-driver-stack") {
    return run_driver_stack(options, model, inputs);
  }
#endif

  ethosu_rt::DrmNpu npu(ethosu_rt::real_linux_sys());
  check(npu.open(options.device.c_str()));
  check(npu.prepare(model));
  const int64_t timeout_ns = static_cast<int64_t>(options.timeout_ms) * 1000000;
  for (long run_index = 0; run_index < options.executions; ++run_index) {
    // Inputs and outputs may share scratch, so the inputs go in before every run.
    for (size_t i = 0; i < inputs.size(); ++i) {
      check(ethosu_rt::copy_input(model, npu.regions(), i, inputs[i].data(), inputs[i].size()));
    }
    const double start = now_ms();
    check(npu.invoke(timeout_ns));
    printf("inference %ld: %.3f ms\n", run_index + 1, now_ms() - start);
  }
  write_outputs(model, npu.regions(), options.output_prefix);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Reported&) {
    return 1;
  } catch (const std::exception& e) {
    fprintf(stderr, "ethosu_runner: error: %s\n", e.what());
    return 1;
  }
}
