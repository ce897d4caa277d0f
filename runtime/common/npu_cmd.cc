#include "ethosu_rt/npu_cmd.h"

#include "ethosu_rt/artifact.h"
#include "ethosu_rt/check.h"

namespace ethosu_rt {
namespace {

// Ethos-U command opcodes (low 16 bits of the first word). Bit 14 marks a command
// with a second 32-bit payload word.
constexpr uint32_t kOpConv = 0x002;
constexpr uint32_t kOpDepthwise = 0x003;
constexpr uint32_t kOpPool = 0x005;
constexpr uint32_t kOpElementwise = 0x006;
constexpr uint32_t kOpDmaStart = 0x010;
constexpr uint32_t kSetIfmBroadcast = 0x108;
constexpr uint32_t kSetIfmRegion = 0x10F;
constexpr uint32_t kSetOfmPrecision = 0x114;
constexpr uint32_t kSetOfmRegion = 0x11F;
constexpr uint32_t kSetWeightRegion = 0x128;
constexpr uint32_t kSetScaleRegion = 0x129;
constexpr uint32_t kSetDmaSrcRegion = 0x130;
constexpr uint32_t kSetDmaDstRegion = 0x131;
constexpr uint32_t kSetIfm2Broadcast = 0x180;
constexpr uint32_t kSetIfm2Region = 0x18F;
constexpr uint32_t kLongCommand = 0x4000;

constexpr int kUnset = -1;
constexpr uint32_t kBroadcastScalar = 8;  // IFM/IFM2 broadcast mode: a scalar, no read
constexpr uint32_t kPoolNoIfm = 4;        // pooling mode that reads no IFM
constexpr uint32_t kOfmPrecisionNoScale = 0x100;
constexpr uint32_t kDmaExternal = 0x100;  // DMA region flag: not a base-pointer region

// The operands whose region a command stream selects; OFM and DMA destination are written.
enum Operand : uint8_t { kIfm, kIfm2, kOfm, kWeight, kScale, kDmaSrc, kDmaDst, kNumOperands };

constexpr unsigned bit(Operand operand) { return 1u << operand; }

// SET_<operand>_REGION commands checked against the region count, with their field mask.
struct RegionCommand {
  uint16_t op;
  uint8_t operand;
  uint8_t mask;
};
constexpr RegionCommand kRegionCommands[] = {
    {kSetIfmRegion, kIfm, 0x7F},      {kSetOfmRegion, kOfm, 0x7},     {kSetIfm2Region, kIfm2, 0x7},
    {kSetWeightRegion, kWeight, 0x7}, {kSetScaleRegion, kScale, 0x7},
};

struct State {
  int region[kNumOperands] = {kUnset, kUnset, kUnset, kUnset, kUnset, kUnset, kUnset};
  // Reset values are all ones, as the hardware's: broadcast "all" (not scalar) and an
  // OFM precision with the no-scale bit set.
  uint32_t ifm_broadcast = 0xFFFF;
  uint32_t ifm2_broadcast = 0xFFFF;
  uint32_t ofm_precision = 0xFFFF;
};

struct Where {
  char text[48];
};

const char* word_where(Where* w, size_t word) {
  TextBuffer(w->text, sizeof(w->text)).add("command word ").add_u64(word);
  return w->text;
}

// The operands an NPU operation reads; every operation also writes the OFM.
unsigned operation_reads(const State& st, uint32_t op, uint32_t param) {
  const unsigned scale = (st.ofm_precision & kOfmPrecisionNoScale) == 0 ? bit(kScale) : 0;
  if (op == kOpConv || op == kOpDepthwise) {
    return bit(kIfm) | bit((param & 1u) != 0 ? kIfm2 : kWeight) | scale;
  }
  if (op == kOpPool) {
    return (param != kPoolNoIfm ? bit(kIfm) : 0) | scale;
  }
  // kOpElementwise. Unary operations (param 5, 6, 7 and 0x24) and a scalar IFM2 read no IFM2.
  const bool unary = param == 5 || param == 6 || param == 7 || param == 0x24;
  return (st.ifm_broadcast != kBroadcastScalar ? bit(kIfm) : 0) |
         (!unary && st.ifm2_broadcast != kBroadcastScalar ? bit(kIfm2) : 0);
}

// Records the regions of the operands in `operands` as used (and written).
Error mark(const State& st, unsigned operands, size_t word, RegionUse* use) {
  for (unsigned o = 0; o < kNumOperands; ++o) {
    if ((operands & (1u << o)) == 0) {
      continue;
    }
    const int region = st.region[o];
    Where w;
    ETHOSU_RT_CHECK_TRUE(region != kUnset, Error::kBadValue, word_where(&w, word),
                         "the operation uses an operand whose region was never set");
    use->used = static_cast<uint8_t>(use->used | (1u << region));
    if (o == kOfm || o == kDmaDst) {
      use->written = static_cast<uint8_t>(use->written | (1u << region));
    }
  }
  return Error::kOk;
}

// Applies a command that changes no region use; fails for an out-of-range region.
Error set_state(State* st, uint32_t op, uint32_t param, size_t word) {
  switch (op) {
    case kSetDmaSrcRegion:
    case kSetDmaDstRegion:
      st->region[op == kSetDmaSrcRegion ? kDmaSrc : kDmaDst] =
          (param & kDmaExternal) != 0 ? kUnset : static_cast<int>(param & 0x7u);
      break;
    case kSetIfmBroadcast:
      st->ifm_broadcast = param;
      break;
    case kSetIfm2Broadcast:
      st->ifm2_broadcast = param;
      break;
    case kSetOfmPrecision:
      st->ofm_precision = param;
      break;
    default:
      for (const RegionCommand& command : kRegionCommands) {
        if (command.op == op) {
          Where w;
          ETHOSU_RT_CHECK(param & command.mask, <, kNumRegions, Error::kBadValue,
                          word_where(&w, word), "region");
          st->region[command.operand] = static_cast<int>(param & command.mask);
        }
      }
      break;
  }
  return Error::kOk;
}

}  // namespace

Error scan_region_use(const uint8_t* words, size_t size, RegionUse* use) {
  ETHOSU_RT_CHECK_TRUE(words != nullptr && use != nullptr, Error::kBadArgument, "command stream",
                       "pointers must not be null");
  ETHOSU_RT_CHECK(size % 4, ==, size_t{0}, Error::kBadValue, "command stream", "bytes % 4");
  *use = RegionUse{0, 0};
  State st;
  const size_t count = size / 4;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t w0 = load_u32(words + 4 * i);
    const uint32_t op = w0 & 0xFFFFu;
    const uint32_t param = w0 >> 16;
    const size_t word = i;
    if ((op & kLongCommand) != 0) {
      Where w;
      ETHOSU_RT_CHECK(i + 1, <, count, Error::kTruncated, word_where(&w, word),
                      "index of the payload word of a two-word command (word count)");
      ++i;  // none of the long commands changes which regions are used
      continue;
    }
    if (op == kOpConv || op == kOpDepthwise || op == kOpPool || op == kOpElementwise) {
      ETHOSU_RT_TRY(mark(st, operation_reads(st, op, param) | bit(kOfm), word, use));
    } else if (op == kOpDmaStart) {
      const unsigned dma = (st.region[kDmaSrc] != kUnset ? bit(kDmaSrc) : 0) |
                           (st.region[kDmaDst] != kUnset ? bit(kDmaDst) : 0);
      ETHOSU_RT_TRY(mark(st, dma, word, use));
    } else {
      ETHOSU_RT_TRY(set_state(&st, op, param, word));
    }
  }
  return Error::kOk;
}

}  // namespace ethosu_rt
