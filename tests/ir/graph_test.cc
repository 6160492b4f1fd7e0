#include <gtest/gtest.h>

#include "base/error.h"
#include "passes/ir/graph.h"

namespace cuvil::ir {
namespace {

TEST(Graph, ConvShapeNchw) {
  Graph g;
  ValueId x = g.add_input("x", {1, 3, 17, 17});
  ValueId w = g.add_constant("w", {8, 3, 3, 3}, ConstantInit::normal(0, 1, 1));
  ValueId y =
      g.add_node(OpKind::conv2d, {x, w},
                 {{"stride", std::vector<int64_t>{2, 2}}, {"pad", std::vector<int64_t>{1, 1}}});
  EXPECT_EQ(g.value(y).shape, (Shape{1, 8, 9, 9}));
}

}  // namespace
}  // namespace cuvil::ir
