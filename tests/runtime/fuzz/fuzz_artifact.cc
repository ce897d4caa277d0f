// libFuzzer target for the artifact parser and everything that reads artifact-controlled
// bytes afterwards (COP containers, the command-stream scan, IO copies, quantization).
// Built with -fsanitize=fuzzer,address,undefined; see tests/runtime/test_fuzz_artifact.py.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "ethosu_rt/artifact.h"
#include "ethosu_rt/check.h"
#include "ethosu_rt/cop.h"
#include "ethosu_rt/io.h"
#include "ethosu_rt/npu_cmd.h"
#include "ethosu_rt/quant.h"

namespace {

// Formats every failure, so the message code runs on hostile values too.
void format_sink(const ethosu_rt::CheckFailure& failure, void* /*user*/) {
  char line[256];
  ethosu_rt::format_check(failure, line, sizeof(line));
}

void exercise_io(const ethosu_rt::Model& model) {
  ethosu_rt::Regions regions = {};
  std::vector<uint8_t> memory[ethosu_rt::kNumRegions];
  for (uint32_t r = 1; r < ethosu_rt::kNumRegions; ++r) {
    const size_t bytes = ethosu_rt::region_bytes(model, r);
    if (bytes == 0 || bytes > (16u << 20)) {
      continue;
    }
    memory[r].assign(bytes, 0x5A);
    regions.region[r] = ethosu_rt::Region{memory[r].data(), bytes};
  }
  for (size_t i = 0; i < model.num_inputs + model.num_outputs; ++i) {
    const bool output = i >= model.num_inputs;
    const size_t index = output ? i - model.num_inputs : i;
    ethosu_rt::TensorInfo info;
    if ((output ? ethosu_rt::get_output(model, index, &info)
                : ethosu_rt::get_input(model, index, &info)) != ethosu_rt::Error::kOk ||
        info.tensor_bytes > (16u << 20)) {
      continue;
    }
    std::vector<uint8_t> tensor(info.tensor_bytes, 0);
    std::vector<uint8_t> other(info.tensor_bytes, 0);
    if (output) {
      (void)ethosu_rt::copy_output(model, regions, index, tensor.data(), tensor.size());
    } else {
      (void)ethosu_rt::copy_input(model, regions, index, tensor.data(), tensor.size());
    }
    (void)ethosu_rt::from_npu_order(info, tensor.data(), other.data(), other.size());
    std::vector<float> values(info.element_count, 0.5f);
    (void)ethosu_rt::quantize(info, values.data(), values.size(), tensor.data(), tensor.size());
    (void)ethosu_rt::dequantize(info, tensor.data(), tensor.size(), values.data(), values.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ethosu_rt::set_log_sink(format_sink, nullptr);
  // The parser needs 16-byte alignment; an exact-size copy lets ASan see any overread
  // (sizes that are not a multiple of 16 are refused before a byte is read).
  const size_t padded = (size + 15) / 16 * 16;
  uint8_t* copy = static_cast<uint8_t*>(aligned_alloc(16, padded == 0 ? 16 : padded));
  if (size != 0) {
    memcpy(copy, data, size);
  }
  ethosu_rt::Model model;
  if (ethosu_rt::parse_artifact(copy, size, &model) == ethosu_rt::Error::kOk) {
    ethosu_rt::CommandStream stream;
    const ethosu_rt::CopMatch u85 = {0x20000118u};
    if (ethosu_rt::cop_command_stream(model.cmd_data.data, model.cmd_data.size, &u85, &stream) ==
            ethosu_rt::Error::kOk ||
        ethosu_rt::cop_command_stream(model.cmd_data.data, model.cmd_data.size, nullptr, &stream) ==
            ethosu_rt::Error::kOk) {
      ethosu_rt::RegionUse use;
      (void)ethosu_rt::scan_region_use(stream.words, stream.size, &use);
    }
    uint32_t config = 0;
    uint32_t id = 0;
    (void)ethosu_rt::cop_optimizer_config(model.cmd_data.data, model.cmd_data.size, &config, &id);
    exercise_io(model);
  }
  // The container and command-word readers also take the raw input directly.
  (void)ethosu_rt::cop_validate(copy, size);
  ethosu_rt::RegionUse use;
  (void)ethosu_rt::scan_region_use(copy, size & ~size_t{3}, &use);
  free(copy);
  return 0;
}
