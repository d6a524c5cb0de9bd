// Where the tests find their data and the ember command. Only test_paths.cpp
// is compiled with these absolute paths (tests/CMakeLists.txt), so every other
// test object is the same in any checkout and ccache shares it across clones.
#pragma once
#include <string>

namespace ember::test {

std::string data_path(const std::string& name);  // tests/data/<name>
std::string ember_binary();                      // the ember command of this build

}  // namespace ember::test
