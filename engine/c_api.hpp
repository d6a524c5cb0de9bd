// C++ side of the C ABI (include/ember/ember.h): hand an already loaded Program to
// C callers such as nutpie. Free the result with ember_program_free.
#pragma once
#include <memory>

#include "ember/ember.h"
#include "ember/ember.hpp"

namespace ember {

// Throws LoadError unless the program takes one float64 vector of static length.
ember_program* wrap_for_c_abi(std::shared_ptr<const Program> prog);

}  // namespace ember
