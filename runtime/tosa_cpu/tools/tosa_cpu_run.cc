// tosa_cpu_run: runs a CPU graph (.tcg) on .npy or raw inputs and writes .npy outputs.
//
//   tosa_cpu_run --graph model.tcg [--input a.npy[,b.bin]] [--output-dir DIR] [--ops FIRST:COUNT]
//                [--info]
//
// Inputs are given in graph order; a .npy must have the tensor's type and element count, any
// other file must hold exactly the tensor's bytes. Outputs go to DIR/output_<i>.npy (int48 as
// int64). --ops runs only those operators and writes the outputs of the last one to
// DIR/op_<index>_<k>.npy (the earlier values come from inputs: a debugging aid). --info prints
// the graph's figures as JSON and runs nothing. Exit status 0 on success, 1 on any error (the
// runtime's check line on stderr), 2 on bad usage.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "ethosu_rt/check.h"
#include "tosa_cpu/graph.h"
#include "tosa_cpu/ops.h"

namespace {

void log_to_stderr(const ethosu_rt::CheckFailure& failure, void*) {
  char line[512];
  ethosu_rt::format_check(failure, line, sizeof(line));
  fprintf(stderr, "%s\n", line);
}

bool read_file(const std::string& path, std::vector<uint8_t>* data) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  uint8_t buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), f)) > 0) data->insert(data->end(), buffer, buffer + n);
  const bool ok = ferror(f) == 0;
  fclose(f);
  return ok;
}

const char* npy_descr(tosa_cpu::DType dtype) {
  switch (dtype) {
    case tosa_cpu::DType::kBool: return "|b1";
    case tosa_cpu::DType::kInt8: return "|i1";
    case tosa_cpu::DType::kInt16: return "<i2";
    case tosa_cpu::DType::kInt32: return "<i4";
    case tosa_cpu::DType::kInt48: return "<i8";
  }
  return "?";
}

std::string shape_text(const tosa_cpu::Tensor& t) {
  std::string s = "(";
  for (uint32_t i = 0; i < t.rank; ++i) s += std::to_string(t.shape[i]) + (t.rank == 1 || i + 1 < t.rank ? "," : "");
  return s + ")";
}

// Loads `path` into `t` (an input of the graph); prints the reason and returns false when
// the file does not fit.
bool load_input(const std::string& path, const tosa_cpu::Tensor& t, size_t index) {
  std::vector<uint8_t> data;
  if (!read_file(path, &data)) {
    fprintf(stderr, "tosa_cpu_run: input %zu: %s must be a readable file\n", index, path.c_str());
    return false;
  }
  const uint8_t* payload = data.data();
  size_t size = data.size();
  if (size >= 10 && memcmp(data.data(), "\x93NUMPY", 6) == 0) {
    const size_t header_len = data[6] == 1 ? (data[8] | (data[9] << 8)) : size >= 12 ? (data[8] | (data[9] << 8) | (data[10] << 16) | (static_cast<size_t>(data[11]) << 24)) : 0;
    const size_t start = (data[6] == 1 ? 10 : 12) + header_len;
    if (start > size) {
      fprintf(stderr, "tosa_cpu_run: input %zu: %s: npy header must fit the file\n", index, path.c_str());
      return false;
    }
    const std::string header(reinterpret_cast<const char*>(data.data()), start);
    const char* want = npy_descr(t.dtype);
    std::string alt = want;
    if (alt[0] == '|') alt[0] = '<';
    if (header.find(std::string("'") + want + "'") == std::string::npos &&
        header.find(std::string("'") + alt + "'") == std::string::npos) {
      fprintf(stderr, "tosa_cpu_run: input %zu: %s: npy type must be %s (%s); got header %s\n", index,
              path.c_str(), want, tosa_cpu::dtype_name(t.dtype), header.c_str() + 10);
      return false;
    }
    if (header.find("'fortran_order': True") != std::string::npos) {
      fprintf(stderr, "tosa_cpu_run: input %zu: %s: npy must be C order; got Fortran order\n", index, path.c_str());
      return false;
    }
    payload += start;
    size -= start;
  }
  if (size != t.bytes) {
    fprintf(stderr, "tosa_cpu_run: input %zu: %s: data bytes must be %zu (%s %s); got %zu\n", index,
            path.c_str(), t.bytes, tosa_cpu::dtype_name(t.dtype), shape_text(t).c_str(), size);
    return false;
  }
  memcpy(t.data, payload, size);
  return true;
}

bool write_npy(const std::string& path, const tosa_cpu::Tensor& t) {
  std::string header = std::string("{'descr': '") + npy_descr(t.dtype) +
                       "', 'fortran_order': False, 'shape': " + shape_text(t) + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  FILE* f = fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const uint8_t preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                static_cast<uint8_t>(header.size() & 0xFF),
                                static_cast<uint8_t>(header.size() >> 8)};
  bool ok = fwrite(preamble, 1, 10, f) == 10 && fwrite(header.data(), 1, header.size(), f) == header.size() &&
            fwrite(t.data, 1, t.bytes, f) == t.bytes;
  ok = fclose(f) == 0 && ok;
  return ok;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

int usage(const char* problem) {
  fprintf(stderr,
          "tosa_cpu_run: %s\nusage: tosa_cpu_run --graph model.tcg [--input a.npy[,b.npy]] "
          "[--output-dir DIR] [--ops FIRST:COUNT] [--info]\n",
          problem);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string graph_path, inputs_arg, out_dir = ".", ops_arg;
  bool info = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--info") {
      info = true;
      continue;
    }
    if (i + 1 >= argc) return usage(("option " + arg + " must have a value").c_str());
    if (arg == "--graph") graph_path = argv[++i];
    else if (arg == "--input") inputs_arg = argv[++i];
    else if (arg == "--output-dir") out_dir = argv[++i];
    else if (arg == "--ops") ops_arg = argv[++i];
    else return usage(("option must be one of --graph, --input, --output-dir, --ops, --info; got " + arg).c_str());
  }
  if (graph_path.empty()) return usage("--graph must be given");
  ethosu_rt::set_log_sink(log_to_stderr, nullptr);

  std::vector<uint8_t> file;
  if (!read_file(graph_path, &file)) {
    fprintf(stderr, "tosa_cpu_run: %s must be a readable file\n", graph_path.c_str());
    return 1;
  }
  std::vector<uint64_t> blob((file.size() + 7) / 8);  // 8-byte aligned copy
  memcpy(blob.data(), file.data(), file.size());
  tosa_cpu::Graph graph;
  if (!ethosu_rt::ok(graph.open(blob.data(), file.size()))) {
    fprintf(stderr, "tosa_cpu_run: %s must be a valid CPU graph (see the line above)\n", graph_path.c_str());
    return 1;
  }
  if (info) {
    printf("{\"arena_bytes\": %zu, \"ops\": %zu, \"inputs\": %zu, \"outputs\": %zu}\n",
           graph.arena_bytes(), graph.num_ops(), graph.num_inputs(), graph.num_outputs());
    return 0;
  }
  std::vector<uint8_t> arena_storage(graph.arena_bytes() + tosa_cpu::kArenaAlignment);
  uint8_t* arena = arena_storage.data();
  arena += (tosa_cpu::kArenaAlignment - reinterpret_cast<uintptr_t>(arena) % tosa_cpu::kArenaAlignment) %
           tosa_cpu::kArenaAlignment;
  if (!ethosu_rt::ok(graph.bind(arena, graph.arena_bytes()))) return 1;

  const std::vector<std::string> inputs = split(inputs_arg);
  if (inputs.size() != graph.num_inputs()) {
    fprintf(stderr, "tosa_cpu_run: --input must name %zu files (one per graph input); got %zu\n",
            graph.num_inputs(), inputs.size());
    return 1;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    tosa_cpu::Tensor t;
    if (!ethosu_rt::ok(graph.input(i, &t)) || !load_input(inputs[i], t, i)) return 1;
  }
  size_t first = 0, count = graph.num_ops();
  if (!ops_arg.empty()) {
    char* end = nullptr;
    first = strtoul(ops_arg.c_str(), &end, 10);
    if (end == nullptr || *end != ':') return usage("--ops must be FIRST:COUNT");
    count = strtoul(end + 1, &end, 10);
  }
  if (!ethosu_rt::ok(graph.run_ops(first, count))) {
    fprintf(stderr, "tosa_cpu_run: the graph must run; it failed (see the line above)\n");
    return 1;
  }
  if (!ops_arg.empty() && count > 0) {
    const size_t last = first + count - 1;
    for (size_t k = 0;; ++k) {
      tosa_cpu::Tensor t;
      ethosu_rt::set_log_sink(nullptr, nullptr);
      if (!ethosu_rt::ok(graph.op_output(last, k, &t))) break;
      const std::string path = out_dir + "/op_" + std::to_string(last) + "_" + std::to_string(k) + ".npy";
      if (!write_npy(path, t)) {
        fprintf(stderr, "tosa_cpu_run: %s must be writable\n", path.c_str());
        return 1;
      }
    }
    return 0;
  }
  for (size_t i = 0; i < graph.num_outputs(); ++i) {
    tosa_cpu::Tensor t;
    if (!ethosu_rt::ok(graph.output(i, &t))) return 1;
    const std::string path = out_dir + "/output_" + std::to_string(i) + ".npy";
    if (!write_npy(path, t)) {
      fprintf(stderr, "tosa_cpu_run: %s must be writable\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
