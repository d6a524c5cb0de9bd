// NumPy .npy files (format 1.0-3.0) for `ember run`: little-endian,
// C order, the dtypes Ember carries.
#pragma once
#include <string>

#include "ember/ember.hpp"

namespace ember {

Array read_npy(const std::string& path);  // throws CallError naming the file
void write_npy(const std::string& path, const Tensor& t);

}  // namespace ember
