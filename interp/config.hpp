// The environment variables Ember reads (interp/config.def), read once into
// one Config shared by every thread. Each reader keeps its own reading of
// the text (a flag is "set to anything", a level its first digit, ...);
// what is read, and when, is decided here.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ember {

// One member per row of config.def: the variable's value, nullopt if unset.
struct Config {
#define X(field, name, dflt, doc) std::optional<std::string> field;
#include "interp/config.def"
#undef X
};

// A row of config.def.
struct ConfigVar {
  const char* name;
  const char* dflt;  // as documented ("" = unset)
  const char* doc;
  std::optional<std::string> Config::*value;
};
std::span<const ConfigVar> config_vars();

// The environment as the first call found it; later changes are not seen.
// The first call also warns once on stderr about each EMBER_* variable in
// the environment that config.def does not list (a typo, most likely).
const Config& config();

// A row's value in the environment now, not as first read: for the disk
// cache's directory, which a running process (a Dask worker) may repoint
// between loads. Other rows go through config().
std::optional<std::string> config_now(std::optional<std::string> Config::*field);

// Reads the environment again, for tests that set variables at run time.
// References from earlier calls stay valid (they see the old values).
void config_reload_for_tests();

// The EMBER_* names in the environment that config.def does not list.
std::vector<std::string> unknown_ember_variables();

}  // namespace ember
