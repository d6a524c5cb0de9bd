#include "interp/config.hpp"

#include <atomic>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

extern char** environ;

namespace ember {

namespace {

constexpr ConfigVar kVars[] = {
#define X(field, name, dflt, doc) {name, dflt, doc, &Config::field},
#include "interp/config.def"
#undef X
};

const Config* read_environment() {
  auto* c = new Config;
  for (const ConfigVar& v : kVars)
    if (const char* e = std::getenv(v.name)) c->*v.value = std::string(e);
  return c;
}

const Config* first_read() {
  for (const std::string& name : unknown_ember_variables())
    std::fprintf(stderr, "ember: warning: %s is not a variable Ember reads (`ember config` lists them)\n",
                 name.c_str());
  return read_environment();
}

// A reload publishes a new Config and never frees the old one: a thread may
// still be reading it, and only tests reload.
std::atomic<const Config*>& current() {
  static std::atomic<const Config*> c{first_read()};
  return c;
}

}  // namespace

std::span<const ConfigVar> config_vars() { return kVars; }

const Config& config() { return *current().load(std::memory_order_acquire); }

std::optional<std::string> config_now(std::optional<std::string> Config::*field) {
  for (const ConfigVar& v : kVars)
    if (v.value == field) {
      if (const char* e = std::getenv(v.name)) return std::string(e);
      return std::nullopt;
    }
  return std::nullopt;
}

void config_reload_for_tests() {
  // Retired readings stay reachable (not leaks): a thread may still read one.
  static std::mutex m;
  static auto* retired = new std::vector<const Config*>;  // never destroyed: reachable at exit
  const Config* old = current().exchange(read_environment(), std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lock(m);
  retired->push_back(old);
}

std::vector<std::string> unknown_ember_variables() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    if (!entry.starts_with("EMBER_")) continue;
    const std::string_view name = entry.substr(0, entry.find('='));
    bool known = false;
    for (const ConfigVar& v : kVars) known = known || name == v.name;
    if (!known) out.emplace_back(name);
  }
  return out;
}

}  // namespace ember
