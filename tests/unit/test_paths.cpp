#include "test_paths.hpp"

namespace ember::test {

std::string data_path(const std::string& name) { return std::string(EMBER_TEST_DATA) + "/" + name; }
std::string ember_binary() { return EMBER_BINARY; }

}  // namespace ember::test
