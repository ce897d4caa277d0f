// Writes valid sample artifacts (the fuzzer's starting corpus) into a directory.
#include <stdio.h>

#include <string>

#include "artifact_builder.h"

namespace {

bool write(const std::string& path, const uint8_t* data, size_t size) {
  FILE* file = fopen(path.c_str(), "wb");
  const bool ok = file != nullptr && fwrite(data, 1, size, file) == size;
  if (file != nullptr) {
    fclose(file);
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_fuzz_seeds <corpus directory>\n");
    return 2;
  }
  const std::string dir = argv[1];
  static test_support::ArtifactBuffer buffer;
  test_support::Sample samples[4];
  test_support::make_sample(&samples[0]);
  test_support::make_separate_io_sample(&samples[1]);
  test_support::make_sample(&samples[2]);
  samples[2].scratch_fast_size = 512;
  samples[2].outputs[0].vela_shape[5] = 32;  // padded output rows
  test_support::make_sample(&samples[3]);
  samples[3].inputs[0].layout = 1;  // NHWC for an NCHW tensor
  for (int i = 0; i < 4; ++i) {
    buffer.size = test_support::build_artifact(samples[i], buffer.bytes, sizeof(buffer.bytes));
    if (buffer.size == 0 ||
        !write(dir + "/seed" + std::to_string(i) + ".bin", buffer.bytes, buffer.size)) {
      fprintf(stderr, "make_fuzz_seeds: could not write seed %d to %s\n", i, dir.c_str());
      return 1;
    }
  }
  return 0;
}
