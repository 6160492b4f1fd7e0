#include "bench_suite/workload_options.h"

namespace cuvil::bench {

void add_workload_options(CLI::App& command, WorkloadSpec& spec) {
  CLI::Option* suite = command.add_option("--suite", spec.suite, "resnet50 | llama3-8b | sdxl");
  CLI::Option* model =
      command.add_option("--model", spec.model, "an ONNX model file (instead of --suite)");
  suite->excludes(model);
  command
      .add_option("--input", spec.inputs,
                  "bind a model input's shape, NAME:1x3x224x224 (repeatable; --model only)")
      ->needs(model);
  command
      .add_option("--batch", spec.batch,
                  "the model's load ladder: batch sizes, e.g. 1,4,16 (axis 0 of every input "
                  "whose axis 0 is dynamic; --model only)")
      ->delimiter(',')
      ->needs(model);
  command
      .add_option("--ladder", spec.ladder,
                  "the model's load ladder as a YAML file (configs/ladders/ schema; keys: batch "
                  "and the model's dimension names; --model only)")
      ->needs(model);
}

}  // namespace cuvil::bench
