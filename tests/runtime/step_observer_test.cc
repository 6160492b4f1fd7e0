#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "runtime/executor.h"
#include "runtime/kernel_table.h"
#include "runtime/step_observer.h"

namespace cuvil::runtime {
namespace {

// x[3] -> relu -> relu -> ... (`steps` steps), each writing its own arena tensor.
Plan chain_plan(int steps) {
  Plan plan;
  plan.threads = 1;
  plan.tensors.push_back({"x", {3}, ir::DType::f32, PlanTensor::Storage::input, 0, 0});
  for (int i = 0; i < steps; ++i) {
    // Appended, not "r" + to_string(i): GCC 12 warns falsely (-Wrestrict) on the latter.
    std::string index = std::to_string(i);
    plan.tensors.push_back({std::string("r").append(index),
                            {3},
                            ir::DType::f32,
                            PlanTensor::Storage::arena,
                            64 * i,
                            -1});
    Step s;
    s.op = ir::OpKind::relu;
    s.kernel = default_kernel(s.op).name;
    s.fn = default_kernel(s.op).fn;
    s.inputs = {i};
    s.input_shapes = {{3}};
    s.output = i + 1;
    s.output_shape = {3};
    s.node_name = std::string("relu").append(index);
    plan.steps.push_back(s);
  }
  plan.inputs = {0};
  plan.outputs = {steps};
  plan.arena_bytes = 64 * steps;
  return plan;
}

// Writes down every call as text.
class Recorder : public StepObserver {
 public:
  std::vector<std::string> events;
  std::vector<std::thread::id> threads;
  void on_run_begin() override { add("run"); }
  void on_step_begin(size_t i) override { add(std::string("b").append(std::to_string(i))); }
  void on_step_end(size_t i) override { add(std::string("e").append(std::to_string(i))); }
  void on_run_end() override { add("end"); }

 private:
  void add(std::string e) {
    events.push_back(std::move(e));
    threads.push_back(std::this_thread::get_id());
  }
};

const ir::Tensor kInput({3}, {-1, 2, -3});

TEST(StepObserver, SeesEveryStepOnceInOrderPerRun) {
  Executor ex(chain_plan(3));
  Recorder r;
  ex.set_observer(&r);
  ex.run({kInput});
  ex.run({kInput});
  const std::vector<std::string> one = {"run", "b0", "e0", "b1", "e1", "b2", "e2", "end"};
  std::vector<std::string> two = one;
  two.insert(two.end(), one.begin(), one.end());
  EXPECT_EQ(r.events, two);
}

TEST(StepObserver, SingleStepPlan) {
  Executor ex(chain_plan(1));
  Recorder r;
  ex.set_observer(&r);
  ex.run({kInput});
  EXPECT_EQ(r.events, (std::vector<std::string>{"run", "b0", "e0", "end"}));
}

TEST(StepObserver, CalledOnTheThreadThatRuns) {
  Executor ex(chain_plan(7));
  Recorder r;
  ex.set_observer(&r);
  ex.run({kInput});
  ASSERT_EQ(r.threads.size(), 2u + 2 * 7);
  for (const std::thread::id& t : r.threads) EXPECT_EQ(t, std::this_thread::get_id());
}

TEST(StepObserver, OffByDefault) {
  Executor ex(chain_plan(2));
  EXPECT_EQ(ex.observer(), nullptr);
}

TEST(StepObserver, RemovedObserverSeesNothingMore) {
  Executor ex(chain_plan(2));
  Recorder r;
  ex.set_observer(&r);
  ex.run({kInput});
  const size_t seen = r.events.size();
  ex.set_observer(nullptr);
  ex.run({kInput});
  EXPECT_EQ(r.events.size(), seen);
}

TEST(StepObserver, DoesNotChangeResults) {
  Executor plain(chain_plan(3));
  Executor observed(chain_plan(3));
  Recorder r;
  observed.set_observer(&r);
  EXPECT_EQ(observed.run({kInput})[0].data, plain.run({kInput})[0].data);
}

TEST(StepObserver, BadInputIsRejectedBeforeTheObserverSeesARun) {
  Executor ex(chain_plan(2));
  Recorder r;
  ex.set_observer(&r);
  EXPECT_THROW(ex.run({}), UserError);
  EXPECT_TRUE(r.events.empty());
}

}  // namespace
}  // namespace cuvil::runtime
