#include "ethosu_rt/check.h"

namespace ethosu_rt {
namespace {

LogSink g_sink = nullptr;
void* g_sink_user = nullptr;

bool is_equality(const char* relation) { return relation[0] == '=' && relation[1] == '='; }
bool is_inequality(const char* relation) { return relation[0] == '!' && relation[1] == '='; }

void add_value(TextBuffer& text, uint64_t bits, bool is_signed, bool hex) {
  if (is_signed) {
    text.add_i64(static_cast<int64_t>(bits), hex);
  } else {
    text.add_u64(bits, hex);
  }
}

}  // namespace

void set_log_sink(LogSink sink, void* user) {
  g_sink = sink;
  g_sink_user = user;
}

Error report_check(const CheckFailure& failure) {
  if (g_sink != nullptr) {
    g_sink(failure, g_sink_user);
  }
  return failure.site->error;
}

TextBuffer::TextBuffer(char* data, size_t capacity) : data_(data), capacity_(capacity), length_(0) {
  if (capacity_ > 0) {
    data_[0] = '\0';
  }
}

TextBuffer& TextBuffer::add(const char* text) { return add(text, static_cast<size_t>(-1)); }

TextBuffer& TextBuffer::add(const char* text, size_t max_len) {
  for (size_t i = 0; i < max_len && text[i] != '\0'; ++i) {
    // Count every character so the caller learns the untruncated length.
    if (length_ + 1 < capacity_) {
      data_[length_] = text[i];
      data_[length_ + 1] = '\0';
    }
    ++length_;
  }
  return *this;
}

TextBuffer& TextBuffer::add_printable(const char* text, size_t max_len) {
  char one[2] = {0, 0};
  for (size_t i = 0; i < max_len && text[i] != '\0'; ++i) {
    one[0] = (text[i] >= ' ' && text[i] <= '~') ? text[i] : '?';
    add(one);
  }
  return *this;
}

TextBuffer& TextBuffer::add_u64(uint64_t value, bool hex) {
  char digits[24];
  size_t n = 0;
  const unsigned base = hex ? 16u : 10u;
  do {
    const unsigned digit = static_cast<unsigned>(value % base);
    digits[n++] = static_cast<char>(digit < 10 ? '0' + digit : 'a' + (digit - 10));
    value /= base;
  } while (value != 0);
  if (hex) {
    add("0x");
  }
  char text[2] = {0, 0};
  while (n > 0) {
    text[0] = digits[--n];
    add(text);
  }
  return *this;
}

TextBuffer& TextBuffer::add_i64(int64_t value, bool hex) {
  if (value < 0) {
    add("-");
    // Negate in unsigned arithmetic so INT64_MIN is exact.
    return add_u64(0u - static_cast<uint64_t>(value), hex);
  }
  return add_u64(static_cast<uint64_t>(value), hex);
}

Error report_values(const CheckSite& site, const char* where, uint64_t limit, uint64_t got) {
  return report_check(CheckFailure{&site, where, limit, got, nullptr, nullptr});
}

Error report_texts(const CheckSite& site, const char* where, const char* limit_text,
                   const char* got_text) {
  return report_check(CheckFailure{&site, where, 0, 0, limit_text, got_text});
}

size_t format_check(const CheckFailure& failure, char* out, size_t out_len) {
  const CheckSite& site = *failure.site;
  TextBuffer text(out, out_len);
  text.add(site.file).add(":").add_u64(site.line).add(": ");
  if (failure.where != nullptr && failure.where[0] != '\0') {
    text.add(failure.where).add(": ");
  }
  text.add(site.what != nullptr ? site.what : "value");
  if (site.relation == nullptr) {
    if (failure.limit_text != nullptr) {
      text.add(" must be ").add(failure.limit_text);
    }
    if (failure.got_text != nullptr) {
      text.add("; got ").add(failure.got_text);
    }
    return text.length();
  }
  if (is_equality(site.relation)) {
    text.add(" must be ");
  } else if (is_inequality(site.relation)) {
    text.add(" must not be ");
  } else {
    text.add(" must be ").add(site.relation).add(" ");
  }
  if (failure.limit_text != nullptr) {
    text.add(failure.limit_text);
  } else {
    add_value(text, failure.limit, (site.flags & kCheckLimitSigned) != 0,
              (site.flags & kCheckHex) != 0);
  }
  text.add("; got ");
  if (failure.got_text != nullptr) {
    text.add(failure.got_text);
  } else {
    add_value(text, failure.got, (site.flags & kCheckGotSigned) != 0,
              (site.flags & kCheckHex) != 0);
  }
  return text.length();
}

}  // namespace ethosu_rt
