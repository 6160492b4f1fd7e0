// AMX tile configuration shared by the bf16 (TDPBF16PS) and int8 (TDPBUSD) GEMMs: eight tiles of
// 16 rows x 64 bytes, loaded on the thread that runs them (the configuration is per thread).
// Call only where cpu_has_amx_bf16() or cpu_has_amx_int8() said yes.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace cuvil::runtime::cpu {

struct AmxTileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

__attribute__((target("amx-tile"))) inline void configure_amx_tiles() {
  AmxTileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
}

}  // namespace cuvil::runtime::cpu
