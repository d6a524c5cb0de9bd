// Calling a differentiated program (a "gradient" directive's): logp and the
// joined gradient at one flat point.
#pragma once
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "ember/ember.hpp"

namespace ember::test {

inline std::pair<double, std::vector<double>> call(const std::shared_ptr<const Program>& p,
                                                   const std::vector<double>& pt) {
  Array a = Array::of<double>(Shape{1, {static_cast<int64_t>(pt.size())}}, pt);
  std::vector<Tensor> t{a.t};
  const std::vector<Array> out = p->call(std::span<const Tensor>(t.data(), t.size()));
  std::vector<double> g(out.at(1).size());
  for (size_t i = 0; i < g.size(); ++i) g[i] = out[1].t.at<double>(static_cast<int64_t>(i));
  return {out[0].t.at<double>(0), g};
}

}  // namespace ember::test
