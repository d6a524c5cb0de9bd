// Fuzz target: the graph loader on arbitrary bytes. JSON text goes through
// Program::from_json (Graph::parse), the binary container (magic EMBRGRPH)
// through Program::load on a file. A graph that loads is run once. The only
// exceptions allowed out are LoadError and CallError; anything else (another
// exception, a crash, a sanitizer report) is a bug.
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "engine/graph/graph.hpp"
#include "fuzz_common.hpp"

using namespace ember;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::shared_ptr<const Program> p;
  try {
    if (size >= 8 && std::memcmp(data, "EMBRGRPH", 8) == 0)
      p = Program::load(fuzz_target::write_scratch("graph", data, size));
    else
      p = Program::from_json(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const LoadError&) {
    return 0;
  } catch (const nlohmann::json::exception&) {
    // EMBER_FUZZ_SKIP_KNOWN=1 lets a run look past the known escape of
    // nlohmann exceptions from Graph::parse (see docs/testing.md).
    static const bool skip = std::getenv("EMBER_FUZZ_SKIP_KNOWN") != nullptr;
    if (!skip) throw;
    return 0;
  }
  // A loaded graph must survive a write/read round trip through the container.
  try {
    const std::string path = fuzz_target::scratch_path("roundtrip");
    p->graph().write_file(path);
    Program::load(path);
  } catch (const LoadError& e) {
    fuzz_target::violation(std::string("a loaded graph does not reload from its own container: ") + e.what());
  }
  fuzz_target::run_once(*p, data, size);
  return 0;
}
