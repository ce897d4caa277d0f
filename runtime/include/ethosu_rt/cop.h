// Vela's driver payload containers around the NPU command stream.
//
// COP1: "COP1" then driver actions; OPTIMIZER_CONFIG (cmd 1) carries cfg/id, the
//       COMMAND_STREAM action (cmd 2) carries the command words, NOP (cmd 5) pads.
//       The only format the Cortex-M core driver accepts.
// COP2: 16-byte header {"COP2", u16 major=1, u16 minor, u64 length}, then entries
//       {u32 type, u32 length, payload}; a COMMAND_STREAM entry (type 1) holds
//       {u32 metadata_length, VEUM metadata {config, id, features, cache_size}, words}.
//       Used by Linux direct drive.
#ifndef ETHOSU_RT_COP_H_
#define ETHOSU_RT_COP_H_

#include <stddef.h>
#include <stdint.h>

#include "ethosu_rt/error.h"

namespace ethosu_rt {

constexpr uint32_t kCop1Magic = 0x31504F43u;  // bytes "COP1"
constexpr uint32_t kCop2Magic = 0x32504F43u;  // bytes "COP2"
constexpr uint32_t kVeumMagic = 0x4D554556u;  // bytes "VEUM"
constexpr size_t kMaxCommandStreamBytes = 16u * 1024u * 1024u;

enum class CopFormat : uint8_t { kCop1 = 1, kCop2 = 2 };

// Decoded NPU configuration word (OPTIMIZER_CONFIG cfg, VEUM config, or the NPU's
// CONFIG register): product in bits 31..28 (0 U55, 1 U65, 2 U85), log2(MACs/cycle)
// in bits 3..0.
inline uint32_t npu_product(uint32_t config) { return config >> 28; }
inline uint32_t npu_log2_macs(uint32_t config) { return config & 0xFu; }

struct CommandStream {
  CopFormat format;
  const uint8_t* words;  // raw NPU command words (little-endian u32s), inside the payload
  size_t size;           // bytes, a non-zero multiple of 4
  size_t offset;         // of `words` from the start of the payload
  bool has_config;       // an OPTIMIZER_CONFIG action / VEUM metadata was present
  uint32_t config;
  uint32_t id;
  uint64_t cache_size;  // COP2 metadata: fast-scratch bytes needed (0 for COP1)
};

// Optional selection of one COP2 COMMAND_STREAM entry by NPU product and MAC count
// (the kernel picks the entry whose metadata matches the hardware).
struct CopMatch {
  uint32_t config;  // compared on npu_product() and npu_log2_macs() only
};

// Finds the command stream in a COP1 or COP2 payload. Without `match`, the payload must
// hold exactly one stream; with it, exactly one entry must match.
Error cop_command_stream(const uint8_t* payload, size_t size, const CopMatch* match,
                         CommandStream* out);

// Checks the whole payload (every action or entry complete and in bounds) and that it
// holds at least one command stream; COP2 may hold one per NPU variant.
Error cop_validate(const uint8_t* payload, size_t size);

// Reads the OPTIMIZER_CONFIG cfg/id (COP1) or the VEUM config/id (COP2, first entry).
Error cop_optimizer_config(const uint8_t* payload, size_t size, uint32_t* config, uint32_t* id);

// The payload's format from its FourCC.
Error cop_format(const uint8_t* payload, size_t size, CopFormat* format);

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_COP_H_
