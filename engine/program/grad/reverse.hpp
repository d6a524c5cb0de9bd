// The reverse sweep: gradients of a 0-d cost with respect to some variables.
#pragma once
#include <vector>

#include "engine/program/grad/builder.hpp"

namespace ember::grad {

// d cost / d wrt[i] for each i, appended to the editor's graph (-1: the
// cost does not depend on it). Only nodes on a path from some wrt to the
// cost are differentiated; their contributions are summed in the order the
// sweep meets them, so the same graph always gives the same gradient graph.
std::vector<int> reverse(Builder& b, int cost, const std::vector<int>& wrt, const std::string& source);

}  // namespace ember::grad
