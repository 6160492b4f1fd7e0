// A register tile's row count as a compile-time constant: with_rows<Max>(rows, f) calls
// f(std::integral_constant<int, R>{}) with R = rows clamped to [1, Max], so a kernel written for
// R rows is instantiated once per count instead of in a switch of its own. For tiles whose
// shapes are looked up in a table instead (the convolutions), see register_tile.h.
#pragma once

#include <algorithm>
#include <type_traits>
#include <utility>

namespace cuvil::runtime::cpu {

template <class F, int... I>
void with_rows_of(int rows, F& f, std::integer_sequence<int, I...>) {
  ((rows == I + 1 ? (f(std::integral_constant<int, I + 1>{}), 0) : 0), ...);
}

template <int Max, class F>
void with_rows(int rows, F&& f) {
  with_rows_of(std::clamp(rows, 1, Max), f, std::make_integer_sequence<int, Max>{});
}

}  // namespace cuvil::runtime::cpu
