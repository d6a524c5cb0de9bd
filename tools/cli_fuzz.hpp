// `ember fuzz`: the differential runner (tools/differential.hpp) on the
// command line.
#pragma once

namespace CLI {
class App;
}

namespace ember {
// Registers the `fuzz` subcommand; its callback ends the parse with the
// command's exit code (CLI::Success or CLI::RuntimeError).
void add_fuzz_command(CLI::App& app);
}  // namespace ember
