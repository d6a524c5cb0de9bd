// The parsers of the options the environment, the `ember` command and the
// Python module share (EMBER_JIT / --jit / jit=, EMBER_JIT_MEMORY /
// --jit-memory / jit_memory=): one grammar everywhere. python/ember/options.py
// calls these through ember._core, and its fallback for when the native
// module is absent is tested to agree with them.
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace ember {

enum class JitMode { Off, Auto, Eager };

// "off", "auto" or "eager", in any case; "0" is off.
std::optional<JitMode> parse_jit_mode(std::string_view s);
const char* jit_mode_name(JitMode m);

// Bytes: a decimal number ("4096", "1.5", "2e9") with an optional unit K, M,
// G or T (powers of 1024; "Ki", "KiB" and "KB" alike; any case) and an
// optional trailing "B", blanks around; the product truncated to whole bytes.
std::optional<size_t> parse_size(std::string_view s);

// The same, throwing std::invalid_argument whose message names `what`, the
// option or variable the text came from.
JitMode parse_jit_mode_or_throw(std::string_view s, std::string_view what);
size_t parse_size_or_throw(std::string_view s, std::string_view what);

}  // namespace ember
