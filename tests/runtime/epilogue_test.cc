// runtime/cpu/epilogue: which epilogues have a register-tile (lane) form, and apply_lanes()
// computing what Epilogue::apply computes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "runtime/cpu/epilogue.h"

namespace cuvil::runtime {
namespace {

using cpu::Epilogue;
using cpu::LaneEpilogue;
using ir::OpKind;

// A step with output [2, 3, 8] and the given epilogue; operand i (a binary step's) has shape
// shapes[i] and is appended after one op input.
Step step_with(const std::vector<ir::EpilogueStep>& epilogue,
               const std::vector<ir::Shape>& operand_shapes) {
  Step s;
  s.op = OpKind::conv2d;
  s.output_shape = {2, 3, 8};
  s.input_shapes = {{2, 3, 8}};
  for (const ir::Shape& shape : operand_shapes) s.input_shapes.push_back(shape);
  for (size_t i = 0; i < s.input_shapes.size(); ++i) s.inputs.push_back(static_cast<int32_t>(i));
  s.epilogue = epilogue;
  return s;
}

TEST(Epilogue, LaneFormReadsOperandsAtTheElementTheColumnOrOnce) {
  const Step s = step_with({{OpKind::add, 1},
                            {OpKind::mul, 2},
                            {OpKind::relu},
                            {OpKind::sub, 3},
                            {OpKind::clip, -1, {-1.0f, 1.0f}},
                            {OpKind::div, 4}},
                           {{2, 3, 8}, {8}, {1, 1, 1}, {1, 1, 8}});
  std::vector<float> data(48, 1.0f), out(48);
  const float* in[] = {data.data(), data.data(), data.data() + 1, data.data() + 2, data.data() + 3};
  const Epilogue e(s, in, out.data());
  const LaneEpilogue* lanes = e.lanes();
  ASSERT_NE(lanes, nullptr);
  ASSERT_EQ(lanes->count, 6);
  EXPECT_EQ(lanes->columns, 8);
  EXPECT_EQ(lanes->steps[0].operand, LaneEpilogue::Operand::element);
  EXPECT_EQ(lanes->steps[1].operand, LaneEpilogue::Operand::column);
  EXPECT_EQ(lanes->steps[1].src, in[2]);
  EXPECT_EQ(lanes->steps[2].operand, LaneEpilogue::Operand::none);
  EXPECT_EQ(lanes->steps[3].operand, LaneEpilogue::Operand::scalar);
  EXPECT_EQ(lanes->steps[4].a, -1.0f);
  EXPECT_EQ(lanes->steps[4].b, 1.0f);
  EXPECT_EQ(lanes->steps[5].operand, LaneEpilogue::Operand::column);
  // [1, 3, 8] against [2, 3, 8] repeats per batch: not one of the three forms.
  const Step per_batch = step_with({{OpKind::add, 1}}, {{1, 3, 8}});
  EXPECT_EQ(Epilogue(per_batch, in, out.data()).lanes(), nullptr);
}

TEST(Epilogue, NoLaneFormForTranscendentalsMinMaxOrPerRowOperands) {
  std::vector<float> data(48, 1.0f), out(48);
  const float* in[] = {data.data(), data.data()};
  for (const Step& s :
       {step_with({{OpKind::sigmoid}}, {}), step_with({{OpKind::gelu}}, {}),
        step_with({{OpKind::max, 1}}, {{8}}), step_with({{OpKind::add, 1}}, {{2, 3, 1}})}) {
    EXPECT_EQ(Epilogue(s, in, out.data()).lanes(), nullptr) << ir::to_string(s.epilogue[0].op);
  }
}

// apply_lanes on a row gives what apply gives, bit for bit, NaN and signed zeros included.
TEST(Epilogue, ApplyLanesComputesWhatApplyComputes) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> base(48), element(48), column(8), scalar = {-0.25f};
  for (int i = 0; i < 48; ++i) base[i] = static_cast<float>((i * 37) % 23 - 11) * 0.125f;
  for (int i = 0; i < 48; ++i) element[i] = static_cast<float>((i * 11) % 17 - 8) * 0.5f;
  for (int i = 0; i < 8; ++i) column[i] = 0.5f + static_cast<float>(i);
  base[3] = nan, base[4] = -0.0f, element[9] = nan;
  const float* in[] = {base.data(), element.data(), column.data(), scalar.data()};
  for (const auto& epilogue : std::vector<std::vector<ir::EpilogueStep>>{
           {{OpKind::add, 1}, {OpKind::relu}},
           {{OpKind::leaky_relu, -1, {0.2f, 0.0f}}, {OpKind::div, 2}, {OpKind::sub, 3}},
           {{OpKind::mul, 2}, {OpKind::clip, -1, {-0.5f, 0.5f}}, {OpKind::add, 3}}}) {
    std::vector<ir::Shape> shapes;
    for (const ir::EpilogueStep& st : epilogue) {
      if (st.input == 1) shapes.push_back({2, 3, 8});
      if (st.input == 2) shapes.push_back({8});
      if (st.input == 3) shapes.push_back({1});
    }
    // Operands sit at inputs 1.. in step order; map each step's input to its position.
    std::vector<ir::EpilogueStep> steps = epilogue;
    std::vector<const float*> ptrs = {base.data()};
    for (ir::EpilogueStep& st : steps) {
      if (st.input < 0) continue;
      ptrs.push_back(in[st.input]);
      st.input = static_cast<int>(ptrs.size() - 1);
    }
    const Step s = step_with(steps, shapes);
    std::vector<float> want = base, got = base;
    Epilogue(s, ptrs.data(), want.data()).apply(want.data(), 48);
    const Epilogue e(s, ptrs.data(), got.data());
    ASSERT_NE(e.lanes(), nullptr);
    for (int row = 0; row < 6; ++row) cpu::apply_lanes(*e.lanes(), got.data() + row * 8, 0, 8);
    for (int i = 0; i < 48; ++i) {
      EXPECT_EQ(std::isnan(got[i]), std::isnan(want[i])) << i;
      if (!std::isnan(want[i])) {
        EXPECT_EQ(got[i], want[i]) << i;
        EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << i;
      }
    }
  }
}

}  // namespace
}  // namespace cuvil::runtime
