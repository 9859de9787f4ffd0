// The binary encoding of the decoder protocol's fields: little-endian integers, IEEE doubles,
// strings as a u32 length and their bytes. The reader checks every read against what is left
// and never allocates more than the input holds, so a hostile length costs nothing.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ingestd::sandbox {

class wire_writer {
public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f64(double v) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    u64(bits);
  }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.append(s.data(), s.size());
  }
  void strings(const std::vector<std::string>& v) {
    u32(static_cast<uint32_t>(v.size()));
    for (auto& s : v)
      str(s);
  }
  /// Raw bytes without a length (the last field of a message).
  void raw(std::string_view s) { out_.append(s.data(), s.size()); }

  std::string& data() { return out_; }
  std::string take() { return std::move(out_); }

private:
  std::string out_;
};

/// Reads fields in order; the first read past the end (or a value out of its range) sets
/// failed() and every later read returns a zero value.
class wire_reader {
public:
  explicit wire_reader(std::string_view in) : in_(in) {}

  uint8_t u8() {
    if (!need(1))
      return 0;
    return static_cast<uint8_t>(in_[pos_++]);
  }
  bool boolean() {
    auto v = u8();
    if (v > 1)
      failed_ = true;
    return v == 1;
  }
  uint32_t u32() {
    if (!need(4))
      return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= uint32_t{static_cast<uint8_t>(in_[pos_++])} << (8 * i);
    return v;
  }
  uint64_t u64() {
    if (!need(8))
      return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= uint64_t{static_cast<uint8_t>(in_[pos_++])} << (8 * i);
    return v;
  }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  double f64() {
    auto bits = u64();
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  std::string_view str_view() {
    auto n = u32();
    if (!need(n))
      return {};
    auto s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string str() { return std::string{str_view()}; }
  /// At most `max` strings (a count above it fails the read).
  std::vector<std::string> strings(uint32_t max) {
    auto n = u32();
    std::vector<std::string> out;
    if (n > max) {
      failed_ = true;
      return out;
    }
    for (uint32_t i = 0; i < n && !failed_; ++i)
      out.push_back(str());
    return out;
  }
  /// What is left, consumed.
  std::string_view rest() {
    auto s = in_.substr(pos_);
    pos_ = in_.size();
    return s;
  }
  /// A count read from the input that must not exceed `max`, nor what the input could still
  /// hold at `min_bytes` each.
  uint32_t count(uint32_t max, size_t min_bytes = 1) {
    auto n = u32();
    if (n > max || (min_bytes > 0 && n > left() / min_bytes))
      failed_ = true;
    return failed_ ? 0 : n;
  }
  void fail() { failed_ = true; }

  bool failed() const { return failed_; }
  size_t left() const { return in_.size() - pos_; }
  /// Every byte read and nothing failed.
  bool done() const { return !failed_ && pos_ == in_.size(); }

private:
  bool need(size_t n) {
    if (failed_ || in_.size() - pos_ < n) {
      failed_ = true;
      return false;
    }
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
  bool failed_ = false;
};

} // namespace ingestd::sandbox
