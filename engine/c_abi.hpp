// C++ side of the C ABI (engine/ember.h): hand an already loaded Program to
// C callers such as nutpie. Free the result with ember_program_free.
#pragma once
#include <memory>

#include "engine/ember.h"
#include "engine/ember.hpp"

namespace ember {

// Throws LoadError unless the program takes one float64 vector of static length.
ember_program* wrap_for_c_abi(std::shared_ptr<const Program> prog);

}  // namespace ember
