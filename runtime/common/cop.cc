#include "ethosu_rt/cop.h"

#include "ethosu_rt/artifact.h"
#include "ethosu_rt/check.h"

namespace ethosu_rt {
namespace {

constexpr uint32_t kActionOptimizerConfig = 1;
constexpr uint32_t kActionCommandStream = 2;
constexpr uint32_t kActionNop = 5;
constexpr uint32_t kEntryCommandStream = 1;
constexpr size_t kCop2HeaderBytes = 16;
constexpr size_t kVeumHeaderBytes = 12;  // fourcc, major, minor, length
constexpr size_t kVeumDataBytes = 20;    // config, id, features, u64 cache_size

struct Where {
  char text[64];
};

// "<what> at byte <offset>", composed only when a check fails (LazyWhere).
void format_at(TextBuffer& t, const LazyWhere& w) {
  t.add(static_cast<const char*>(w.context)).add(" at byte ").add_u64(w.values[0]);
}

LazyWhere at(const char* what, size_t offset) { return {format_at, what, {offset, 0, 0}}; }

const char* config_where(Where* w, const char* format, const CommandStream& first,
                         uint32_t npu_config) {
  TextBuffer t(w->text, sizeof(w->text));
  t.add(format).add(" config ");
  if (first.has_config) {
    t.add_u64(first.config, true);
  } else {
    t.add("(none)");
  }
  t.add(" vs NPU config ").add_u64(npu_config, true);
  return w->text;
}

bool matches(const CopMatch* match, const CommandStream& s) {
  return match == nullptr || (s.has_config && npu_product(s.config) == npu_product(match->config) &&
                              npu_log2_macs(s.config) == npu_log2_macs(match->config));
}

// Collects the streams of a payload: how many there are, how many match, and the
// first matching one.
struct Walk {
  const CopMatch* match;
  size_t streams;
  size_t matched;
  CommandStream chosen;
  CommandStream first;

  void add(const CommandStream& s) {
    if (streams++ == 0) {
      first = s;
    }
    if (matches(match, s) && matched++ == 0) {
      chosen = s;
    }
  }
};

Error walk_cop1(const uint8_t* p, size_t size, Walk* walk) {
  ETHOSU_RT_CHECK(size % 4, ==, size_t{0}, Error::kBadValue, "COP1", "payload bytes % 4");
  CommandStream s = {};
  s.format = CopFormat::kCop1;
  size_t pos = 4;
  while (pos < size) {
    const uint32_t header = load_u32(p + pos);
    const uint32_t command = header & 0xFFu;
    switch (command) {
      case kActionOptimizerConfig:
        ETHOSU_RT_CHECK(size - pos, >=, size_t{12}, Error::kTruncated,
                        at("COP1 OPTIMIZER_CONFIG", pos), "bytes left (3 words)");
        s.has_config = true;
        s.config = load_u32(p + pos + 4);
        s.id = load_u32(p + pos + 8);
        pos += 12;
        break;
      case kActionCommandStream: {
        // The length in words is 24 bits: the "reserved" byte (bits 8..15) holds the top
        // 8 bits, the data field (bits 16..31) the low 16.
        const size_t words = (((header >> 8) & 0xFFu) << 16) | (header >> 16);
        ETHOSU_RT_CHECK(words, >=, size_t{1}, Error::kBadValue, at("COP1 COMMAND_STREAM", pos),
                        "length in words");
        ETHOSU_RT_CHECK(words, <=, (size - pos - 4) / 4, Error::kTruncated,
                        at("COP1 COMMAND_STREAM", pos), "length in words (words left)");
        s.words = p + pos + 4;
        s.size = words * 4;
        s.offset = pos + 4;
        walk->add(s);
        pos += 4 + s.size;
        break;
      }
      case kActionNop:
        pos += 4;
        break;
      default:
        ETHOSU_RT_CHECK_ONE_OF(false, command, Error::kBadValue, at("COP1 action", pos),
                               "driver action command",
                               "1 (OPTIMIZER_CONFIG), 2 (COMMAND_STREAM) or 5 (NOP)");
    }
  }
  return Error::kOk;
}

Error read_cop2_stream(const uint8_t* p, size_t pos, size_t length, CommandStream* s) {
  const LazyWhere stream = at("COP2 COMMAND_STREAM", pos);
  const LazyWhere metadata = at("COP2 metadata", pos + 12);
  const uint8_t* entry = p + pos + 8;
  ETHOSU_RT_CHECK(length, >=, size_t{4}, Error::kTruncated, stream,
                  "entry length (room for metadata_length)");
  const uint32_t meta_len = load_u32(entry);
  ETHOSU_RT_CHECK(meta_len, <=, length - 4, Error::kTruncated, stream,
                  "metadata_length (entry length - 4)");
  ETHOSU_RT_CHECK(meta_len, >=, kVeumHeaderBytes + kVeumDataBytes, Error::kTruncated, stream,
                  "metadata_length");
  const uint8_t* meta = entry + 4;
  ETHOSU_RT_CHECK_HEX(load_u32(meta), ==, kVeumMagic, Error::kBadMagic, metadata,
                      "FourCC (\"VEUM\")");
  ETHOSU_RT_CHECK(load_u16(meta + 4), ==, 1u, Error::kUnsupported, metadata, "major version");
  const uint32_t data_len = load_u32(meta + 8);
  ETHOSU_RT_CHECK(data_len, >=, kVeumDataBytes, Error::kTruncated, metadata, "data length");
  ETHOSU_RT_CHECK(data_len, <=, meta_len - kVeumHeaderBytes, Error::kTruncated, metadata,
                  "data length (metadata_length - 12)");
  s->has_config = true;
  s->config = load_u32(meta + 12);
  s->id = load_u32(meta + 16);
  s->cache_size = load_u64(meta + 24);
  const size_t cmd_bytes = length - 4 - meta_len;
  ETHOSU_RT_CHECK(cmd_bytes, >=, size_t{4}, Error::kTruncated, stream, "command bytes");
  ETHOSU_RT_CHECK(cmd_bytes % 4, ==, size_t{0}, Error::kBadValue, stream, "command bytes % 4");
  ETHOSU_RT_CHECK(cmd_bytes, <=, kMaxCommandStreamBytes, Error::kUnsupported, stream,
                  "command bytes");
  s->offset = pos + 8 + 4 + meta_len;
  s->words = p + s->offset;
  s->size = cmd_bytes;
  return Error::kOk;
}

Error walk_cop2(const uint8_t* p, size_t size, Walk* walk) {
  LazyWhere entry = at("COP2 entry", 0);
  ETHOSU_RT_CHECK(size, >=, kCop2HeaderBytes, Error::kTruncated, "COP2", "payload bytes (header)");
  ETHOSU_RT_CHECK(load_u16(p + 4), ==, 1u, Error::kUnsupported, "COP2", "major version");
  const uint64_t length = load_u64(p + 8);
  ETHOSU_RT_CHECK(length, <=, static_cast<uint64_t>(size - kCop2HeaderBytes), Error::kTruncated,
                  "COP2", "header length (payload bytes - 16)");
  const size_t end = kCop2HeaderBytes + static_cast<size_t>(length);
  size_t pos = kCop2HeaderBytes;
  while (pos < end) {
    entry.values[0] = pos;
    ETHOSU_RT_CHECK(end - pos, >=, size_t{8}, Error::kTruncated, entry,
                    "bytes left (entry header)");
    const uint32_t type = load_u32(p + pos);
    const uint32_t entry_len = load_u32(p + pos + 4);
    ETHOSU_RT_CHECK(entry_len, <=, end - pos - 8, Error::kTruncated, entry,
                    "entry length (bytes left)");
    ETHOSU_RT_CHECK(type, !=, 0u, Error::kBadValue, entry, "type");
    if (type == kEntryCommandStream) {
      CommandStream s = {};
      s.format = CopFormat::kCop2;
      ETHOSU_RT_TRY(read_cop2_stream(p, pos, entry_len, &s));
      walk->add(s);
    }
    // Unknown entry types are skipped, as the kernel does. Entries are 4-byte aligned.
    pos += (8 + static_cast<size_t>(entry_len) + 3) & ~size_t{3};
  }
  return Error::kOk;
}

// Finds the format of `payload` and walks it, collecting the streams that satisfy `match`.
Error walk_payload(const uint8_t* payload, size_t size, const CopMatch* match, Walk* walk,
                   CopFormat* format) {
  ETHOSU_RT_TRY(cop_format(payload, size, format));
  *walk = Walk{};
  walk->match = match;
  return *format == CopFormat::kCop1 ? walk_cop1(payload, size, walk)
                                     : walk_cop2(payload, size, walk);
}

const char* format_name(CopFormat format) { return format == CopFormat::kCop1 ? "COP1" : "COP2"; }

}  // namespace

Error cop_format(const uint8_t* payload, size_t size, CopFormat* format) {
  ETHOSU_RT_CHECK_TRUE(payload != nullptr, Error::kBadArgument, "cmd_data",
                       "payload must not be null");
  ETHOSU_RT_CHECK(size, >=, size_t{4}, Error::kTruncated, "cmd_data", "payload bytes");
  const uint32_t magic = load_u32(payload);
  if (magic == kCop1Magic) {
    *format = CopFormat::kCop1;
    return Error::kOk;
  }
  if (magic == kCop2Magic) {
    *format = CopFormat::kCop2;
    return Error::kOk;
  }
  char got[16];
  TextBuffer(got, sizeof(got)).add_u64(magic, true);
  ETHOSU_RT_FAIL_TEXT(Error::kBadMagic, "cmd_data", "FourCC",
                      "\"COP1\" (0x31504f43) or \"COP2\" (0x32504f43)", got);
}

Error cop_command_stream(const uint8_t* payload, size_t size, const CopMatch* match,
                         CommandStream* out) {
  CopFormat format = CopFormat::kCop1;
  Walk walk;
  ETHOSU_RT_TRY(walk_payload(payload, size, match, &walk, &format));
  const char* where = format_name(format);
  ETHOSU_RT_CHECK(walk.streams, >=, size_t{1}, Error::kBadValue, where, "COMMAND_STREAM count");
  if (match == nullptr) {
    ETHOSU_RT_CHECK(walk.streams, ==, size_t{1}, Error::kUnsupported, where,
                    "COMMAND_STREAM count without an NPU to choose by");
  } else {
    Where w;
    ETHOSU_RT_CHECK(walk.matched, >=, size_t{1}, Error::kUnsupported,
                    config_where(&w, where, walk.first, match->config),
                    "COMMAND_STREAM entries built for the NPU's product and MACs");
    ETHOSU_RT_CHECK(walk.matched, ==, size_t{1}, Error::kUnsupported, where,
                    "COMMAND_STREAM entries matching the NPU");
  }
  *out = walk.matched > 0 ? walk.chosen : walk.first;
  return Error::kOk;
}

Error cop_validate(const uint8_t* payload, size_t size) {
  CopFormat format = CopFormat::kCop1;
  Walk walk;
  ETHOSU_RT_TRY(walk_payload(payload, size, nullptr, &walk, &format));
  ETHOSU_RT_CHECK(walk.streams, >=, size_t{1}, Error::kBadValue, format_name(format),
                  "COMMAND_STREAM count");
  return Error::kOk;
}

Error cop_optimizer_config(const uint8_t* payload, size_t size, uint32_t* config, uint32_t* id) {
  CopFormat format = CopFormat::kCop1;
  Walk walk;
  ETHOSU_RT_TRY(walk_payload(payload, size, nullptr, &walk, &format));
  ETHOSU_RT_CHECK_TRUE(walk.streams > 0 && walk.first.has_config, Error::kBadValue,
                       format_name(format),
                       "an OPTIMIZER_CONFIG must come before the command stream");
  *config = walk.first.config;
  *id = walk.first.id;
  return Error::kOk;
}

}  // namespace ethosu_rt
