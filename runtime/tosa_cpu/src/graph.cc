// Parsing and validating a CPU graph, binding its arena and running its operators.
#include "tosa_cpu/graph.h"

#include <string.h>

#include "kernels.h"
#include "tosa_cpu/ops.h"

namespace tosa_cpu {
namespace {

using ethosu_rt::Error;

constexpr uint32_t kMagic = 0x55504354u;  // "TCPU" little-endian
constexpr size_t kHeaderWords = 16;
constexpr size_t kTensorWords = 5 + kMaxRank;
constexpr uint32_t kMaxInputs = 16;
constexpr uint32_t kMaxOutputs = 4;
constexpr uint32_t kStorageArena = 0;
constexpr uint32_t kStorageConstant = 1;

enum HeaderField : size_t {
  kFieldMagic, kFieldVersion, kFieldFileBytes, kFieldArenaBytes, kFieldTensors,
  kFieldTensorsOffset, kFieldOps, kFieldOpsOffset, kFieldOpsBytes, kFieldInputs,
  kFieldInputsOffset, kFieldOutputs, kFieldOutputsOffset, kFieldConstOffset, kFieldConstBytes,
};

constexpr const char* kWhere = "tosa_cpu graph";

uint32_t word(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

// A section [offset, offset + count * unit) must lie inside [0, size).
Error check_section(size_t size, uint32_t offset, uint64_t count, uint64_t unit,
                    const char* what) {
  ETHOSU_RT_CHECK(offset % 4u, ==, 0u, Error::kMisaligned, kWhere, what);
  ETHOSU_RT_CHECK(static_cast<uint64_t>(offset) + count * unit, <=, static_cast<uint64_t>(size),
                  Error::kTruncated, kWhere, what);
  return Error::kOk;
}

}  // namespace

// Reads records of a graph whose header has been checked.
struct OpReader {
  const Graph& g;

  uint32_t field(size_t f) const { return word(g.blob_ + 4 * f); }
  const uint8_t* at(uint32_t offset) const { return g.blob_ + offset; }

  Tensor tensor(uint32_t index) const {
    const uint8_t* rec = at(field(kFieldTensorsOffset)) + 4 * kTensorWords * index;
    Tensor t;
    t.dtype = static_cast<DType>(word(rec));
    t.rank = word(rec + 4);
    t.elements = 1;
    for (uint32_t i = 0; i < kMaxRank; ++i) {
      t.shape[i] = static_cast<int32_t>(word(rec + 8 + 4 * i));
      if (i < t.rank) t.elements *= static_cast<size_t>(t.shape[i]);
    }
    const uint32_t storage = word(rec + 8 + 4 * kMaxRank);
    const uint32_t offset = word(rec + 12 + 4 * kMaxRank);
    t.bytes = word(rec + 16 + 4 * kMaxRank);
    if (storage == kStorageConstant) {
      t.data = const_cast<uint8_t*>(at(field(kFieldConstOffset)) + offset);
    } else {
      t.data = g.arena_ != nullptr ? g.arena_ + offset : nullptr;
    }
    return t;
  }

  Error check_tensor(uint32_t index) const {
    const uint8_t* rec = at(field(kFieldTensorsOffset)) + 4 * kTensorWords * index;
    const uint32_t dtype = word(rec);
    ETHOSU_RT_CHECK_ONE_OF(dtype_size(static_cast<DType>(dtype)) != 0, dtype, Error::kUnsupported,
                           kWhere, "tensor dtype", "bool (1), int8 (3), int16 (4), int32 (5), int48 (6)");
    const uint32_t rank = word(rec + 4);
    ETHOSU_RT_CHECK(rank, <=, kMaxRank, Error::kBadValue, kWhere, "tensor rank");
    uint64_t elements = 1;
    for (uint32_t i = 0; i < rank; ++i) {
      const int32_t dim = static_cast<int32_t>(word(rec + 8 + 4 * i));
      ETHOSU_RT_CHECK(dim, >=, 1, Error::kBadValue, kWhere, "tensor dimension");
      elements *= static_cast<uint64_t>(dim);
      ETHOSU_RT_CHECK(elements, <=, 0x7FFFFFFFull, Error::kOverflow, kWhere, "tensor elements");
    }
    const uint64_t bytes = elements * dtype_size(static_cast<DType>(dtype));
    ETHOSU_RT_CHECK(static_cast<uint64_t>(word(rec + 16 + 4 * kMaxRank)), ==, bytes,
                    Error::kBadValue, kWhere, "tensor bytes (elements x element size)");
    const uint32_t storage = word(rec + 8 + 4 * kMaxRank);
    const uint32_t offset = word(rec + 12 + 4 * kMaxRank);
    if (storage == kStorageConstant) {
      ETHOSU_RT_CHECK(offset % 16u, ==, 0u, Error::kMisaligned, kWhere, "constant offset");
      ETHOSU_RT_CHECK(offset + bytes, <=, static_cast<uint64_t>(field(kFieldConstBytes)),
                      Error::kTruncated, kWhere, "constant end");
    } else {
      ETHOSU_RT_CHECK(storage, ==, kStorageArena, Error::kBadValue, kWhere,
                      "tensor storage (0 arena, 1 constant)");
      ETHOSU_RT_CHECK(offset % kArenaAlignment, ==, 0u, Error::kMisaligned, kWhere,
                      "arena offset");
      ETHOSU_RT_CHECK(offset + bytes, <=, static_cast<uint64_t>(field(kFieldArenaBytes)),
                      Error::kTruncated, kWhere, "arena tensor end");
    }
    return Error::kOk;
  }

  bool is_constant(uint32_t index) const {
    const uint8_t* rec = at(field(kFieldTensorsOffset)) + 4 * kTensorWords * index;
    return word(rec + 8 + 4 * kMaxRank) == kStorageConstant;
  }

  // Walks operator records; `cursor` is the byte offset of the next record inside the op
  // section. Checks the record fits and its tensor indices exist.
  Error read_op(uint32_t* cursor, uint32_t index, Tensor* inputs, Tensor* outputs,
                OpArgs* args) const {
    const uint32_t end = field(kFieldOpsBytes);
    ETHOSU_RT_CHECK(static_cast<uint64_t>(*cursor) + 16u, <=, end, Error::kTruncated, kWhere,
                    "operator record");
    const uint8_t* rec = at(field(kFieldOpsOffset)) + *cursor;
    args->op = word(rec);
    args->index = index;
    args->n_inputs = word(rec + 4);
    args->n_outputs = word(rec + 8);
    args->n_attrs = word(rec + 12);
    ETHOSU_RT_CHECK(args->n_inputs, <=, kMaxInputs, Error::kUnsupported, kWhere,
                    "operator inputs");
    ETHOSU_RT_CHECK(args->n_outputs, <=, kMaxOutputs, Error::kUnsupported, kWhere,
                    "operator outputs");
    ETHOSU_RT_CHECK(args->n_attrs, <=, 64u, Error::kUnsupported, kWhere, "operator attrs");
    const uint32_t words = 4 + args->n_inputs + args->n_outputs + args->n_attrs;
    ETHOSU_RT_CHECK(static_cast<uint64_t>(*cursor) + 4u * words, <=, end, Error::kTruncated,
                    kWhere, "operator record");
    const uint32_t n_tensors = field(kFieldTensors);
    for (uint32_t i = 0; i < args->n_inputs + args->n_outputs; ++i) {
      const uint32_t t = word(rec + 16 + 4 * i);
      ETHOSU_RT_CHECK(t, <, n_tensors, Error::kBadValue, kWhere, "operator tensor index");
      if (i < args->n_inputs) {
        inputs[i] = tensor(t);
      } else {
        ETHOSU_RT_CHECK_TRUE(!is_constant(t), Error::kBadValue, kWhere,
                             "an operator output must be in the arena, not a constant");
        outputs[i - args->n_inputs] = tensor(t);
      }
    }
    args->attrs = reinterpret_cast<const int32_t*>(rec + 16 + 4 * (args->n_inputs + args->n_outputs));
    args->inputs = inputs;
    args->outputs = outputs;
    *cursor += 4 * words;
    return Error::kOk;
  }

  Error io(uint32_t count_field, uint32_t offset_field, size_t index, Tensor* t) const {
    ETHOSU_RT_CHECK(index, <, static_cast<size_t>(field(count_field)), Error::kBadArgument,
                    kWhere, "input/output index");
    *t = tensor(word(at(field(offset_field)) + 4 * index));
    return Error::kOk;
  }
};

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kInt8: return 1;
    case DType::kInt16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt48: return 8;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kBool: return "bool";
    case DType::kInt8: return "int8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt48: return "int48";
  }
  return "unknown";
}

namespace {

Error validate(const OpReader& r, size_t size) {
  ETHOSU_RT_TRY(check_section(size, r.field(kFieldTensorsOffset), r.field(kFieldTensors),
                              4 * kTensorWords, "tensor records"));
  ETHOSU_RT_TRY(check_section(size, r.field(kFieldOpsOffset), r.field(kFieldOpsBytes), 1,
                              "operators"));
  ETHOSU_RT_TRY(check_section(size, r.field(kFieldInputsOffset), r.field(kFieldInputs), 4,
                              "inputs"));
  ETHOSU_RT_TRY(check_section(size, r.field(kFieldOutputsOffset), r.field(kFieldOutputs), 4,
                              "outputs"));
  ETHOSU_RT_TRY(check_section(size, r.field(kFieldConstOffset), r.field(kFieldConstBytes), 1,
                              "constants"));
  ETHOSU_RT_CHECK(r.field(kFieldConstOffset) % 16u, ==, 0u, Error::kMisaligned, kWhere,
                  "constants offset");
  ETHOSU_RT_CHECK(r.field(kFieldArenaBytes) % kArenaAlignment, ==, 0u, Error::kMisaligned,
                  kWhere, "arena bytes");
  for (uint32_t i = 0; i < r.field(kFieldTensors); ++i) {
    ETHOSU_RT_TRY(r.check_tensor(i));
  }
  const HeaderField io_fields[2][2] = {{kFieldInputs, kFieldInputsOffset},
                                       {kFieldOutputs, kFieldOutputsOffset}};
  for (const auto& io : io_fields) {
    const uint32_t f = io[1];
    const uint32_t count = r.field(io[0]);
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t t = word(r.at(r.field(f)) + 4 * i);
      ETHOSU_RT_CHECK(t, <, r.field(kFieldTensors), Error::kBadValue, kWhere,
                      "input/output tensor index");
      ETHOSU_RT_CHECK_TRUE(!r.is_constant(t), Error::kBadValue, kWhere,
                           "a graph input/output must be in the arena, not a constant");
    }
  }
  uint32_t cursor = 0;
  Tensor inputs[kMaxInputs];
  Tensor outputs[kMaxOutputs];
  for (uint32_t i = 0; i < r.field(kFieldOps); ++i) {
    OpArgs args{};
    ETHOSU_RT_TRY(r.read_op(&cursor, i, inputs, outputs, &args));
    const Kernel kernel = find_kernel(args.op);
    ETHOSU_RT_CHECK_ONE_OF(kernel != nullptr, args.op, Error::kUnsupported, kWhere,
                           "operator (TOSA Op number)", "one tosa_cpu/ops.h lists");
    ETHOSU_RT_TRY(kernel(args, false));
  }
  ETHOSU_RT_CHECK(cursor, ==, r.field(kFieldOpsBytes), Error::kBadValue, kWhere,
                  "operator section bytes");
  return Error::kOk;
}

}  // namespace

Error Graph::open(const void* blob, size_t size) {
  blob_ = nullptr;
  arena_ = nullptr;
  ETHOSU_RT_CHECK_TRUE(blob != nullptr, Error::kBadArgument, kWhere, "blob must not be null");
  ETHOSU_RT_CHECK(reinterpret_cast<uintptr_t>(blob) % kBlobAlignment, ==, 0u, Error::kMisaligned,
                  kWhere, "blob address alignment");
  ETHOSU_RT_CHECK(size, >=, 4 * kHeaderWords, Error::kTruncated, kWhere, "blob bytes");
  const uint8_t* data = static_cast<const uint8_t*>(blob);
  ETHOSU_RT_CHECK_HEX(word(data), ==, kMagic, Error::kBadMagic, kWhere, "magic ('TCPU')");
  ETHOSU_RT_CHECK(word(data + 4), ==, kFormatVersion, Error::kUnsupported, kWhere,
                  "format version");
  ETHOSU_RT_CHECK(size, ==, static_cast<size_t>(word(data + 8)), Error::kTruncated, kWhere,
                  "blob bytes (the header's file bytes)");
  blob_ = data;
  size_ = size;
  const Error e = validate(OpReader{*this}, size);
  if (!ok(e)) blob_ = nullptr;
  return e;
}

size_t Graph::arena_bytes() const { return blob_ ? OpReader{*this}.field(kFieldArenaBytes) : 0; }
size_t Graph::num_inputs() const { return blob_ ? OpReader{*this}.field(kFieldInputs) : 0; }
size_t Graph::num_outputs() const { return blob_ ? OpReader{*this}.field(kFieldOutputs) : 0; }
size_t Graph::num_ops() const { return blob_ ? OpReader{*this}.field(kFieldOps) : 0; }

uint32_t Graph::op_code(size_t index) const {
  if (index >= num_ops()) return 0;
  OpReader r{*this};
  uint32_t cursor = 0;
  for (size_t i = 0; i < index; ++i) {
    const uint8_t* rec = r.at(r.field(kFieldOpsOffset)) + cursor;
    cursor += 4 * (4 + word(rec + 4) + word(rec + 8) + word(rec + 12));
  }
  return word(r.at(r.field(kFieldOpsOffset)) + cursor);
}

Error Graph::bind(void* arena, size_t size) {
  ETHOSU_RT_CHECK_TRUE(blob_ != nullptr, Error::kBadState, kWhere, "open() must succeed first");
  ETHOSU_RT_CHECK_TRUE(arena != nullptr || arena_bytes() == 0, Error::kBadArgument, kWhere,
                       "arena must not be null");
  ETHOSU_RT_CHECK(reinterpret_cast<uintptr_t>(arena) % kArenaAlignment, ==, 0u,
                  Error::kMisaligned, kWhere, "arena address alignment");
  ETHOSU_RT_CHECK(size, >=, arena_bytes(), Error::kBufferTooSmall, kWhere, "arena bytes");
  arena_ = static_cast<uint8_t*>(arena);
  return Error::kOk;
}

Error Graph::input(size_t index, Tensor* tensor) const {
  ETHOSU_RT_CHECK_TRUE(blob_ != nullptr && tensor != nullptr, Error::kBadState, kWhere,
                       "open() must succeed first and tensor must not be null");
  return OpReader{*this}.io(kFieldInputs, kFieldInputsOffset, index, tensor);
}

Error Graph::output(size_t index, Tensor* tensor) const {
  ETHOSU_RT_CHECK_TRUE(blob_ != nullptr && tensor != nullptr, Error::kBadState, kWhere,
                       "open() must succeed first and tensor must not be null");
  return OpReader{*this}.io(kFieldOutputs, kFieldOutputsOffset, index, tensor);
}

Error Graph::run() { return run_ops(0, num_ops()); }

Error Graph::run_ops(size_t first, size_t count) {
  ETHOSU_RT_CHECK_TRUE(blob_ != nullptr && (arena_ != nullptr || arena_bytes() == 0),
                       Error::kBadState, kWhere, "open() and bind() must succeed first");
  ETHOSU_RT_CHECK(first + count, <=, num_ops(), Error::kBadArgument, kWhere,
                  "last operator to run");
  OpReader r{*this};
  uint32_t cursor = 0;
  Tensor inputs[kMaxInputs];
  Tensor outputs[kMaxOutputs];
  for (size_t i = 0; i < first + count; ++i) {
    OpArgs args{};
    ETHOSU_RT_TRY(r.read_op(&cursor, static_cast<uint32_t>(i), inputs, outputs, &args));
    if (i >= first) {
      ETHOSU_RT_TRY(find_kernel(args.op)(args, true));
    }
  }
  return Error::kOk;
}

Error Graph::op_output(size_t index, size_t which, Tensor* tensor) const {
  ETHOSU_RT_CHECK_TRUE(blob_ != nullptr && tensor != nullptr, Error::kBadState, kWhere,
                       "open() must succeed first and tensor must not be null");
  ETHOSU_RT_CHECK(index, <, num_ops(), Error::kBadArgument, kWhere, "operator index");
  OpReader r{*this};
  uint32_t cursor = 0;
  Tensor inputs[kMaxInputs];
  Tensor outputs[kMaxOutputs];
  OpArgs args{};
  for (size_t i = 0; i <= index; ++i) {
    ETHOSU_RT_TRY(r.read_op(&cursor, static_cast<uint32_t>(i), inputs, outputs, &args));
  }
  ETHOSU_RT_CHECK(which, <, static_cast<size_t>(args.n_outputs), Error::kBadArgument, kWhere,
                  "operator output index");
  *tensor = outputs[which];
  return Error::kOk;
}

}  // namespace tosa_cpu
