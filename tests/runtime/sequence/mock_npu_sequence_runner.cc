// mock_npu_sequence_runner: runs a sequence artifact (npu: {fallback: cpu}) with the runtime's
// own SequenceRunner, its CPU segments for real (the TOSA kernel library) and its NPU segments
// through a MOCK NPU, since no Ethos-U (hardware or FVP) exists here:
//
//   mock_npu_sequence_runner --model model.bin --input a.bin[,b.bin] --reference DIR
//                            --output out_prefix
//
// DIR holds <tensor name>.bin for every border tensor, in the TOSA graph's layout, as the
// TOSA reference model computes them. The mock checks that each NPU segment receives exactly
// the reference values of its inputs (so a CPU segment's outputs are checked bit for bit) and
// hands back the reference values of its outputs. Any failure: one line, exit status 1.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "ethosu_rt/check.h"
#include "sequence_runner.h"

namespace {

using ethosu_rt::Error;

[[noreturn]] void fail(const std::string& message) {
  fprintf(stderr, "mock_npu_sequence_runner: error: %s\n", message.c_str());
  exit(1);
}

void check(Error error) {
  if (error != Error::kOk) {
    exit(1);  // the check macro already printed the one line
  }
}

void log_to_stderr(const ethosu_rt::CheckFailure& failure, void* /*user*/) {
  char line[512];
  ethosu_rt::format_check(failure, line, sizeof(line));
  fprintf(stderr, "mock_npu_sequence_runner: error: %s\n", line);
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    fail("'" + path + "' must be a readable file");
  }
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file), {});
}

// 16-byte aligned storage.
struct Aligned {
  std::unique_ptr<uint8_t[]> storage;
  uint8_t* data = nullptr;
  size_t size = 0;
  void reset(size_t n) {
    size = n;
    storage.reset(new uint8_t[n + 16]());
    data = storage.get() + (16 - reinterpret_cast<uintptr_t>(storage.get()) % 16) % 16;
  }
};

// The MOCK NPU: per segment, scratch-like region buffers; invoke() checks the inputs against
// the reference and writes the reference outputs where Vela placed them.
class MockNpu final : public ethosu_rt::NpuSegments {
 public:
  MockNpu(const ethosu_rt::Sequence& sequence, std::string reference)
      : sequence_(sequence), reference_(std::move(reference)) {}

  Error prepare(size_t segment, const ethosu_rt::Model& model) override {
    for (uint32_t r = 1; r < ethosu_rt::kNumRegions; ++r) {
      const size_t bytes = ethosu_rt::region_bytes(model, r);
      storage_[segment][r].reset(bytes);
      regions_[segment].region[r] = {bytes ? storage_[segment][r].data : nullptr, bytes};
    }
    return Error::kOk;
  }
  const ethosu_rt::Regions& regions(size_t segment) const override { return regions_[segment]; }

  Error invoke(size_t segment) override {
    const ethosu_rt::Segment& seg = sequence_.segments[segment];
    ethosu_rt::TensorInfo info;
    for (size_t i = 0; i < seg.num_inputs; ++i) {
      const ethosu_rt::SequenceTensor& t = sequence_.tensors[seg.inputs[i]];
      check(ethosu_rt::get_input(seg.npu, i, &info));
      std::vector<uint8_t> got(info.tensor_bytes);
      const ethosu_rt::Region& area = regions_[segment].region[info.region];
      check(ethosu_rt::read_output(info, area.data + info.offset, area.size - info.offset,
                                   got.data(), got.size()));
      if (got != read_file(reference_ + "/" + t.name + ".bin")) {
        fail(std::string("NPU segment ") + std::to_string(segment) + " input '" + t.name +
             "' must equal the TOSA reference model's value; it differs");
      }
      printf("segment %zu (NPU, mock) input '%s': bit-exact\n", segment, t.name);
    }
    for (size_t i = 0; i < seg.num_outputs; ++i) {
      const ethosu_rt::SequenceTensor& t = sequence_.tensors[seg.outputs[i]];
      check(ethosu_rt::get_output(seg.npu, i, &info));
      const std::vector<uint8_t> want = read_file(reference_ + "/" + t.name + ".bin");
      ethosu_rt::Region& area = regions_[segment].region[info.region];
      check(ethosu_rt::write_input(info, want.data(), want.size(), area.data + info.offset,
                                   area.size - info.offset));
    }
    return Error::kOk;
  }

 private:
  const ethosu_rt::Sequence& sequence_;
  std::string reference_;
  Aligned storage_[ethosu_rt::kMaxSegments][ethosu_rt::kNumRegions];
  ethosu_rt::Regions regions_[ethosu_rt::kMaxSegments] = {};
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t end; (end = text.find(',', start)) != std::string::npos; start = end + 1) {
    parts.push_back(text.substr(start, end - start));
  }
  parts.push_back(text.substr(start));
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  ethosu_rt::set_log_sink(log_to_stderr, nullptr);
  std::string model, inputs, reference, output;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    std::string* slot = flag == "--model" ? &model : flag == "--input" ? &inputs
                      : flag == "--reference" ? &reference : flag == "--output" ? &output
                      : nullptr;
    if (slot == nullptr) {
      fail("unknown option '" + flag + "'");
    }
    *slot = argv[i + 1];
  }
  if (model.empty() || inputs.empty() || reference.empty() || output.empty()) {
    fail("--model, --input, --reference and --output must all be given");
  }
  const std::vector<uint8_t> bytes = read_file(model);
  Aligned artifact;
  artifact.reset(bytes.size());
  memcpy(artifact.data, bytes.data(), bytes.size());
  std::unique_ptr<ethosu_rt::SequenceRunner> runner(new ethosu_rt::SequenceRunner());
  check(runner->open(artifact.data, artifact.size));
  Aligned arena;
  arena.reset(runner->arena_bytes());
  check(runner->bind(arena.data, arena.size));
  const std::vector<std::string> files = split(inputs);
  if (files.size() != runner->num_inputs()) {
    fail("--input must list " + std::to_string(runner->num_inputs()) + " file(s)");
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const std::vector<uint8_t> data = read_file(files[i]);
    check(runner->set_input(i, data.data(), data.size()));
  }
  MockNpu npu(runner->sequence(), reference);
  check(runner->prepare(npu));
  check(runner->run(npu));
  for (size_t i = 0; i < runner->num_outputs(); ++i) {
    ethosu_rt::TensorInfo info;
    check(runner->output_info(i, &info));
    std::vector<uint8_t> out(info.tensor_bytes);
    check(runner->get_output(i, out.data(), out.size()));
    const std::string path = output + "-" + std::to_string(i) + ".bin";
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
    printf("output %zu '%s': %zu bytes -> %s\n", i, info.name, out.size(), path.c_str());
  }
  return 0;
}
