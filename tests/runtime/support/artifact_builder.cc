#include "artifact_builder.h"

#include <string.h>

namespace test_support {
namespace {

// Appends to a fixed buffer; any overflow makes the whole build fail.
class Writer {
 public:
  Writer(uint8_t* out, size_t capacity) : out_(out), capacity_(capacity) {}
  void bytes(const void* data, size_t size) {
    if (!ok_ || size > capacity_ - pos_) {
      ok_ = false;
      return;
    }
    memcpy(out_ + pos_, data, size);
    pos_ += size;
  }
  void zeros(size_t size) {
    for (size_t i = 0; i < size; ++i) {
      const uint8_t zero = 0;
      bytes(&zero, 1);
    }
  }
  void u16(uint16_t v) {
    uint8_t b[2];
    store_u16(b, v);
    bytes(b, 2);
  }
  void u32(uint32_t v) {
    uint8_t b[4];
    store_u32(b, v);
    bytes(b, 4);
  }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void u64(uint64_t v) {
    u32(static_cast<uint32_t>(v));
    u32(static_cast<uint32_t>(v >> 32));
  }
  void f32(float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof(bits));
    u32(bits);
  }
  void patch_u32(size_t at, uint32_t v) {
    if (ok_) {
      store_u32(out_ + at, v);
    }
  }
  size_t pos() const { return pos_; }
  bool ok() const { return ok_; }

 private:
  uint8_t* out_;
  size_t capacity_;
  size_t pos_ = 0;
  bool ok_ = true;
};

size_t begin_block(Writer& w, const char* name) {
  const size_t header = w.pos();
  char padded[16] = {};
  const size_t length = strlen(name);
  memcpy(padded, name, length < 15 ? length : 15);
  w.bytes(padded, sizeof(padded));
  w.u32(0);  // size, patched by end_block
  w.zeros(12);
  return header;
}

void end_block(Writer& w, size_t header) {
  w.patch_u32(header + 16, static_cast<uint32_t>(w.pos() - header - 32));
  w.zeros((16 - w.pos() % 16) % 16);
}

void u32_block(Writer& w, const char* name, uint32_t value) {
  const size_t header = begin_block(w, name);
  w.u32(value);
  end_block(w, header);
}

void io_block(Writer& w, const char* name, const IoSpec* io, size_t count) {
  const size_t header = begin_block(w, name);
  w.i32(static_cast<int32_t>(count));
  for (size_t i = 0; i < count; ++i) {
    for (int32_t dim : io[i].vela_shape) {
      w.i32(dim);
    }
    w.i32(io[i].elem_size);
    w.i32(io[i].offset);
    w.i32(io[i].region);
  }
  end_block(w, header);
}

void meta_record(Writer& w, const IoSpec& io) {
  char name[32] = {};  // NUL-padded; a 32-character name (invalid) fills it completely
  const size_t length = strlen(io.name);
  memcpy(name, io.name, length < sizeof(name) ? length : sizeof(name));
  w.bytes(name, sizeof(name));
  w.u32(io.dtype);
  w.u32(io.layout);
  w.u32(io.rank);
  for (int32_t dim : io.shape) {
    w.i32(dim);
  }
  w.f32(io.scale);
  w.i32(io.zero_point);
  w.u32(0);
}

uint32_t dtype_bytes(uint32_t dtype) { return dtype == 3 ? 2 : (dtype == 4 || dtype == 6 ? 4 : 1); }

}  // namespace

void store_u16(uint8_t* p, uint16_t value) {
  p[0] = static_cast<uint8_t>(value);
  p[1] = static_cast<uint8_t>(value >> 8);
}

void store_u32(uint8_t* p, uint32_t value) {
  for (int i = 0; i < 4; ++i) {
    p[i] = static_cast<uint8_t>(value >> (8 * i));
  }
}

IoSpec plain_io(const char* name, uint32_t dtype, const int32_t* shape, uint32_t rank,
                int32_t offset, int32_t region) {
  IoSpec io = {};
  for (int d = 0; d < 6; ++d) {
    io.vela_shape[d] = 1;
  }
  for (uint32_t d = 0; d < rank; ++d) {
    io.vela_shape[6 - rank + d] = shape[d];
    io.shape[d] = shape[d];
  }
  io.elem_size = static_cast<int32_t>(dtype_bytes(dtype));
  io.offset = offset;
  io.region = region;
  io.name = name;
  io.dtype = dtype;
  io.layout = 0;
  io.rank = rank;
  io.scale = 0.25f;
  io.zero_point = 0;
  return io;
}

size_t conv_stream(uint32_t in_region, uint32_t out_region, uint32_t* words) {
  size_t n = 0;
  words[n++] = cmd0(kSetIfmRegion, in_region);
  words[n++] = cmd0(kSetOfmRegion, out_region);
  words[n++] = cmd0(kSetWeightRegion, 0);
  words[n++] = cmd0(kSetScaleRegion, 0);
  words[n++] = cmd0(kSetOfmPrecision, 0);  // bit 8 clear: the operation reads scales
  words[n++] = cmd0(kSetIfmBase0, 0);
  words[n++] = 0x00000000u;  // the base address word of the command above
  words[n++] = cmd0(kOpConv, 0);
  words[n++] = cmd0(kOpStop, 0);
  return n;
}

size_t elementwise_stream(uint32_t in_region, uint32_t out_region, uint32_t* words) {
  size_t n = 0;
  words[n++] = cmd0(kSetIfmRegion, in_region);
  words[n++] = cmd0(kSetOfmRegion, out_region);
  words[n++] = cmd0(kOpElementwise, 5);  // a unary operation: no IFM2
  words[n++] = cmd0(kOpStop, 0);
  return n;
}

size_t build_cop1(uint32_t config, uint32_t id, const uint32_t* words, size_t count, uint8_t* out,
                  size_t capacity) {
  Writer w(out, capacity);
  w.u32(0x31504F43u);
  w.u32(0x00100001u);  // OPTIMIZER_CONFIG, release 0 patch 1
  w.u32(config);
  w.u32(id);
  for (int i = 0; i < 3; ++i) {
    w.u32(0x00000005u);  // NOP
  }
  // COMMAND_STREAM: the top 8 bits of the word count in byte 1, the low 16 in bytes 2..3.
  w.u32(0x2u | (((static_cast<uint32_t>(count) >> 16) & 0xFFu) << 8) |
        ((static_cast<uint32_t>(count) & 0xFFFFu) << 16));
  for (size_t i = 0; i < count; ++i) {
    w.u32(words[i]);
  }
  return w.ok() ? w.pos() : 0;
}

size_t build_cop2(const Cop2Entry* entries, size_t num_entries, uint8_t* out, size_t capacity) {
  Writer w(out, capacity);
  w.u32(0x32504F43u);
  w.u16(1);
  w.u16(0);
  w.u64(0);  // length, patched below
  for (size_t e = 0; e < num_entries; ++e) {
    const size_t entry = w.pos();
    // Fill after the 32 metadata bytes so the command words start 16-byte aligned.
    const size_t fill = (16 - (entry + 8 + 4 + 32) % 16) % 16;
    const uint32_t meta_len = static_cast<uint32_t>(32 + fill);
    w.u32(1);  // COMMAND_STREAM
    w.u32(static_cast<uint32_t>(4 + meta_len + 4 * entries[e].count));
    w.u32(meta_len);
    w.u32(0x4D554556u);  // VEUM
    w.u16(1);
    w.u16(0);
    w.u32(20);
    w.u32(entries[e].config);
    w.u32(entries[e].id);
    w.u32(2);  // features
    w.u64(entries[e].cache_size);
    for (size_t i = 0; i < fill; ++i) {
      const uint8_t ff = 0xFF;
      w.bytes(&ff, 1);
    }
    for (size_t i = 0; i < entries[e].count; ++i) {
      w.u32(entries[e].words[i]);
    }
  }
  w.patch_u32(8, static_cast<uint32_t>(w.pos() - 16));
  return w.ok() ? w.pos() : 0;
}

void make_sample(Sample* s) {
  *s = Sample{};
  uint32_t words[16];
  const size_t count = conv_stream(1, 1, words);
  s->cmd_size = build_cop1(kU55Config, kU55Id, words, count, s->cmd, sizeof(s->cmd));
  s->weight_size = 16;
  for (size_t i = 0; i < s->weight_size; ++i) {
    s->weights[i] = static_cast<uint8_t>(i + 1);
  }
  s->scratch_size = 2048;
  s->scratch_fast_size = 0;
  const int32_t shape[4] = {1, 8, 8, 16};
  s->inputs[0] = plain_io("x", 1, shape, 4, 1024, 1);
  s->num_inputs = 1;
  s->outputs[0] = plain_io("y", 1, shape, 4, 0, 1);
  s->num_outputs = 1;
}

void make_separate_io_sample(Sample* s) {
  *s = Sample{};
  uint32_t words[16];
  const size_t count = elementwise_stream(3, 4, words);
  const Cop2Entry entry = {kU85Config, kU85Id, 0, words, count};
  s->cmd_size = build_cop2(&entry, 1, s->cmd, sizeof(s->cmd));
  s->weight_size = 1;
  s->weights[0] = 0;
  s->scratch_size = 0;
  s->scratch_fast_size = 0;
  const int32_t shape[4] = {1, 4, 4, 8};
  s->inputs[0] = plain_io("x", 1, shape, 4, 0, 3);
  s->num_inputs = 1;
  s->outputs[0] = plain_io("y", 1, shape, 4, 0, 4);
  s->num_outputs = 1;
}

size_t build_artifact(const Sample& s, uint8_t* out, size_t capacity) {
  Writer w(out, capacity);
  end_block(w, begin_block(w, "vela_bin_stream"));
  size_t header = begin_block(w, "cmd_data");
  w.bytes(s.cmd, s.cmd_size);
  end_block(w, header);
  header = begin_block(w, "weight_data");
  w.bytes(s.weights, s.weight_size);
  end_block(w, header);
  u32_block(w, "scratch_size", s.scratch_size);
  io_block(w, "inputs", s.inputs, s.num_inputs);
  io_block(w, "outputs", s.outputs, s.num_outputs);
  u32_block(w, "scratch_fast", s.scratch_fast_size);
  header = begin_block(w, "io_meta");
  w.u32(0x444D4F49u);
  w.u16(1);
  w.u16(0);
  w.u32(static_cast<uint32_t>(s.num_inputs));
  w.u32(static_cast<uint32_t>(s.num_outputs));
  for (size_t i = 0; i < s.num_inputs; ++i) {
    meta_record(w, s.inputs[i]);
  }
  for (size_t i = 0; i < s.num_outputs; ++i) {
    meta_record(w, s.outputs[i]);
  }
  end_block(w, header);
  end_block(w, begin_block(w, "vela_end_stream"));
  return w.ok() ? w.pos() : 0;
}

size_t block_offset(const uint8_t* artifact, size_t index) {
  size_t offset = 0;
  for (size_t i = 0; i < index; ++i) {
    const uint32_t size = static_cast<uint32_t>(artifact[offset + 16]) |
                          (static_cast<uint32_t>(artifact[offset + 17]) << 8) |
                          (static_cast<uint32_t>(artifact[offset + 18]) << 16) |
                          (static_cast<uint32_t>(artifact[offset + 19]) << 24);
    offset += 32 + ((size + 15u) & ~15u);
  }
  return offset;
}

}  // namespace test_support
