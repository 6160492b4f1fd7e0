// Load ladders: per suite, named rungs from light to heavy, read from configs/ladders/<suite>.yaml.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cuvil::bench {

struct Rung {
  std::string name;
  std::map<std::string, int64_t> params;  // suite-specific keys (batch, seq, image, ...)
  bool is_default = true;                 // part of the suite's default CPU ladder
  int64_t param(const std::string& key, int64_t fallback) const;
};

struct Ladder {
  std::string suite;
  std::vector<Rung> rungs;  // light to heavy
  std::string source;       // file it came from
};

// Reads a ladder file; `allowed_keys` are the suite's rung parameters. Problems are UserErrors
// "FILE:LINE: FIELD: message".
Ladder load_ladder(const std::string& path, const std::vector<std::string>& allowed_keys);

// Picks rungs by a comma-separated list of names, "all", or "" (the default rungs), in ladder
// order. An unknown name is a UserError listing the known ones.
std::vector<Rung> select_rungs(const Ladder& ladder, const std::string& selection);

// Folder holding ladders/ and the default .cuvilpass files: $CUVIL_CONFIG_DIR, else the source
// tree's configs/.
std::string config_dir();

}  // namespace cuvil::bench
