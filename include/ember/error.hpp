// Errors Ember reports. Every message names where the fault is.
#pragma once
#include <stdexcept>
#include <string>

namespace ember {

// Raised while reading or validating a graph: names file, node, op, field.
struct LoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Raised by a call: wrong inputs, shape mismatch, failed assertion.
struct CallError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ember
