#include "interp/option_parse.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string>

namespace ember {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equal_nocase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

bool digit(char c) { return c >= '0' && c <= '9'; }
bool blank(char c) { return c == ' ' || c == '\t'; }

// The error texts; python/ember/options.py's fallback spells them the same.
std::string quoted(std::string_view what, std::string_view s) {
  return std::string(what) + ": '" + std::string(s) + "'";
}

// Whether a decimal number too large or too small for a double is too
// small: its decimal exponent is negative (overflow needs it above 300).
bool underflows(std::string_view num) {
  long mag = 0;  // digits before the point, or minus the zeros after it
  size_t i = 0;
  while (i < num.size() && num[i] == '0') ++i;
  if (i < num.size() && digit(num[i])) {
    while (i < num.size() && digit(num[i])) ++i, ++mag;
  }
  if (i < num.size() && num[i] == '.') {
    ++i;
    if (mag == 0)
      while (i < num.size() && num[i] == '0') ++i, --mag;
    while (i < num.size() && digit(num[i])) ++i;
  }
  long exp = 0;
  bool neg = false;
  if (i < num.size() && (num[i] == 'e' || num[i] == 'E')) {
    ++i;
    if (i < num.size() && (num[i] == '+' || num[i] == '-')) neg = num[i++] == '-';
    while (i < num.size() && digit(num[i])) exp = std::min(exp * 10 + (num[i++] - '0'), 1L << 40);
  }
  return mag + (neg ? -exp : exp) < 0;
}

}  // namespace

std::optional<JitMode> parse_jit_mode(std::string_view s) {
  if (equal_nocase(s, "off") || s == "0") return JitMode::Off;
  if (equal_nocase(s, "auto")) return JitMode::Auto;
  if (equal_nocase(s, "eager")) return JitMode::Eager;
  return std::nullopt;
}

const char* jit_mode_name(JitMode m) {
  switch (m) {
    case JitMode::Off: return "off";
    case JitMode::Eager: return "eager";
    default: return "auto";
  }
}

std::optional<size_t> parse_size(std::string_view s) {
  size_t i = 0;
  auto skip_blanks = [&] {
    while (i < s.size() && blank(s[i])) ++i;
  };
  skip_blanks();
  // The number: digits [. digits] or . digits, then an optional exponent.
  const size_t num = i;
  size_t mantissa = 0;
  while (i < s.size() && digit(s[i])) ++i, ++mantissa;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && digit(s[i])) ++i, ++mantissa;
  }
  if (mantissa == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const size_t exp = i;
    while (i < s.size() && digit(s[i])) ++i;
    if (i == exp) return std::nullopt;
  }
  // from_chars, not strtod: the C locale's decimal point whatever the
  // process's locale.
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data() + num, s.data() + i, v);
  if (end != s.data() + i) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    if (!underflows(s.substr(num, i - num))) return std::nullopt;
    v = 0;  // below the smallest double: 0 bytes, as any value under 1
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  skip_blanks();
  double unit = 1;
  if (i < s.size()) {
    switch (lower(s[i])) {
      case 'k': unit = 0x1p10; break;
      case 'm': unit = 0x1p20; break;
      case 'g': unit = 0x1p30; break;
      case 't': unit = 0x1p40; break;
      default: break;
    }
    if (unit != 1) {
      ++i;
      if (i < s.size() && lower(s[i]) == 'i') ++i;
    }
  }
  if (i < s.size() && lower(s[i]) == 'b') ++i;
  skip_blanks();
  if (i != s.size()) return std::nullopt;
  const double bytes = v * unit;
  if (!(bytes < 0x1p64)) return std::nullopt;  // also inf and nan
  return static_cast<size_t>(bytes);
}

JitMode parse_jit_mode_or_throw(std::string_view s, std::string_view what) {
  if (const auto m = parse_jit_mode(s)) return *m;
  throw std::invalid_argument(quoted(what, s) + " is not off, auto or eager");
}

size_t parse_size_or_throw(std::string_view s, std::string_view what) {
  if (const auto n = parse_size(s)) return *n;
  throw std::invalid_argument(quoted(what, s) + " is not a size such as 4096, 256M or 1.5G");
}

}  // namespace ember
