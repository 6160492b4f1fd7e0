#include "bench_suite/suites.h"

#include <algorithm>

#include "base/error.h"
#include "bench_suite/models/llama3_8b.h"
#include "bench_suite/models/resnet50.h"
#include "bench_suite/models/sdxl_unet.h"

namespace cuvil::bench {

namespace {

// Rung parameters shape the input (batch, sequence, resolution); `tiny` shrinks the network's
// widths and depths but keeps the topology, so the reference interpreter can check it quickly.

ir::Graph build_resnet50(const Rung& rung, bool tiny) {
  models::ResNet50Options o = tiny ? models::resnet50_tiny() : models::ResNet50Options{};
  o.batch = rung.param("batch", o.batch);
  if (!tiny) o.image = rung.param("image", o.image);
  return models::build_resnet50(o);
}

ir::Graph build_llama3(const Rung& rung, bool tiny) {
  models::Llama3Options o = tiny ? models::llama3_tiny() : models::Llama3Options{};
  o.batch = rung.param("batch", o.batch);
  o.with_embedding_and_head = rung.param("head", 0) != 0;
  if (tiny) {
    // Keep the rung's character (decode vs prefill) at a size the interpreter checks quickly.
    o.seq = rung.param("seq", 1) == 1 ? 1 : 7;
    o.past = rung.param("past", 0) > 0 ? 5 : 0;
  } else {
    o.seq = rung.param("seq", o.seq);
    o.past = rung.param("past", 0);
    o.layers = rung.param("layers", o.layers);
  }
  if (o.layers < 1 || o.layers > 32) throw UserError("llama3-8b: layers must be in [1, 32]");
  return models::build_llama3(o);
}

ir::Graph build_sdxl(const Rung& rung, bool tiny) {
  models::SdxlOptions o = tiny ? models::sdxl_tiny() : models::SdxlOptions{};
  o.batch = rung.param("batch", o.batch);
  if (!tiny) {
    const int64_t image = rung.param("image", 1024);
    if (image % 64 != 0) throw UserError("sdxl: image must be a multiple of 64 pixels");
    o.latent = image / 8;
  }
  return models::build_sdxl_unet(o);
}

}  // namespace

const std::vector<Suite>& suites() {
  static const std::vector<Suite> all = {
      {"resnet50",
       "ResNet-50 v1.5 image classification, 224x224 (4.09 GMAC per image)",
       {"batch", "image"},
       &build_resnet50},
      {"llama3-8b",
       "Llama-3-8B decoder: prefill and KV-cache decode, 1..32 layers",
       {"batch", "seq", "past", "layers", "head"},
       &build_llama3,
       {"int8"}},
      {"sdxl",
       "SDXL UNet, one denoising step with 77x2048 text conditioning",
       {"batch", "image"},
       &build_sdxl,
       {"int8"}},
  };
  return all;
}

const Suite& find_suite(const std::string& name) {
  std::string known;
  for (const Suite& s : suites()) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  throw UserError("--suite: unknown suite '" + name + "' (known: " + known + ")");
}

Ladder load_suite_ladder(const Suite& suite) {
  Ladder ladder = load_ladder(config_dir() + "/ladders/" + suite.name + ".yaml", suite.rung_keys);
  if (ladder.suite != suite.name) {
    throw UserError(ladder.source + ": suite: names '" + ladder.suite + "', expected '" +
                    suite.name + "'");
  }
  return ladder;
}

const std::string& config_name_of(const Suite& suite) {
  return suite.config_name.empty() ? suite.name : suite.config_name;
}

std::string opt_level_config_path(const Suite& suite, const std::string& target,
                                  const std::string& level) {
  if (level == "O2") return default_config_path(suite, target);
  if (std::find(kOptLevels.begin(), kOptLevels.end(), level) == kOptLevels.end()) {
    throw UserError("opt level '" + level + "' is not one of O0, O1, O2, O3");
  }
  return config_dir() + "/opt/" + level + "." + target + ".cuvilpass";
}

std::string default_config_path(const Suite& suite, const std::string& target) {
  return config_dir() + "/" + config_name_of(suite) + "." + target + ".cuvilpass";
}

}  // namespace cuvil::bench
