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

struct State {
  int ifm = kUnset;
  int ifm2 = kUnset;
  int ofm = kUnset;
  int weight = kUnset;
  int scale = kUnset;
  int dma_src = kUnset;
  int dma_dst = kUnset;
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

Error mark(int region, bool written, size_t word, RegionUse* use) {
  Where w;
  ETHOSU_RT_CHECK_TRUE(region != kUnset, Error::kBadValue, word_where(&w, word),
                       "the operation uses an operand whose region was never set");
  use->used = static_cast<uint8_t>(use->used | (1u << region));
  if (written) {
    use->written = static_cast<uint8_t>(use->written | (1u << region));
  }
  return Error::kOk;
}

Error set_region(uint32_t param, size_t word, int* region) {
  Where w;
  ETHOSU_RT_CHECK(param, <, kNumRegions, Error::kBadValue, word_where(&w, word), "region");
  *region = static_cast<int>(param);
  return Error::kOk;
}

Error operation(const State& st, uint32_t op, uint32_t param, size_t word, RegionUse* use) {
  const bool scale = (st.ofm_precision & kOfmPrecisionNoScale) == 0;
  switch (op) {
    case kOpConv:
    case kOpDepthwise: {
      const bool weights_from_ifm2 = (param & 1u) != 0;
      ETHOSU_RT_TRY(mark(st.ifm, false, word, use));
      ETHOSU_RT_TRY(mark(weights_from_ifm2 ? st.ifm2 : st.weight, false, word, use));
      if (scale) {
        ETHOSU_RT_TRY(mark(st.scale, false, word, use));
      }
      break;
    }
    case kOpPool:
      if (param != kPoolNoIfm) {
        ETHOSU_RT_TRY(mark(st.ifm, false, word, use));
      }
      if (scale) {
        ETHOSU_RT_TRY(mark(st.scale, false, word, use));
      }
      break;
    default: {  // kOpElementwise
      // Unary operations (param 5, 6, 7 and 0x24) and a scalar IFM2 read no IFM2.
      const bool unary = param == 5 || param == 6 || param == 7 || param == 0x24;
      if (st.ifm_broadcast != kBroadcastScalar) {
        ETHOSU_RT_TRY(mark(st.ifm, false, word, use));
      }
      if (!unary && st.ifm2_broadcast != kBroadcastScalar) {
        ETHOSU_RT_TRY(mark(st.ifm2, false, word, use));
      }
      break;
    }
  }
  return mark(st.ofm, true, word, use);
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
    switch (op) {
      case kOpConv:
      case kOpDepthwise:
      case kOpPool:
      case kOpElementwise:
        ETHOSU_RT_TRY(operation(st, op, param, word, use));
        break;
      case kOpDmaStart:
        if (st.dma_src != kUnset) {
          ETHOSU_RT_TRY(mark(st.dma_src, false, word, use));
        }
        if (st.dma_dst != kUnset) {
          ETHOSU_RT_TRY(mark(st.dma_dst, true, word, use));
        }
        break;
      case kSetIfmRegion:
        ETHOSU_RT_TRY(set_region(param & 0x7Fu, word, &st.ifm));
        break;
      case kSetOfmRegion:
        ETHOSU_RT_TRY(set_region(param & 0x7u, word, &st.ofm));
        break;
      case kSetIfm2Region:
        ETHOSU_RT_TRY(set_region(param & 0x7u, word, &st.ifm2));
        break;
      case kSetWeightRegion:
        ETHOSU_RT_TRY(set_region(param & 0x7u, word, &st.weight));
        break;
      case kSetScaleRegion:
        ETHOSU_RT_TRY(set_region(param & 0x7u, word, &st.scale));
        break;
      case kSetDmaSrcRegion:
        st.dma_src = (param & kDmaExternal) != 0 ? kUnset : static_cast<int>(param & 0x7u);
        break;
      case kSetDmaDstRegion:
        st.dma_dst = (param & kDmaExternal) != 0 ? kUnset : static_cast<int>(param & 0x7u);
        break;
      case kSetIfmBroadcast:
        st.ifm_broadcast = param;
        break;
      case kSetIfm2Broadcast:
        st.ifm2_broadcast = param;
        break;
      case kSetOfmPrecision:
        st.ofm_precision = param;
        break;
      default:
        break;
    }
  }
  return Error::kOk;
}

}  // namespace ethosu_rt
