#include "runtime/cpu/broadcast.h"

#include "base/error.h"

namespace cuvil::runtime::cpu {

Broadcast::Broadcast(const ir::Shape& operand, const ir::Shape& out) {
  const size_t r = out.size();
  CUVIL_CHECK(operand.size() <= r, "broadcast: operand has higher rank than the result");
  // Operand strides aligned to the result's dims (leading missing dims broadcast).
  int64_t dims[32], strides[32];
  CUVIL_CHECK(r <= 32, "broadcast: rank too large");
  int64_t stride = 1;
  for (size_t i = r; i-- > 0;) {
    const size_t lead = r - operand.size();
    const int64_t od = i < lead ? 1 : operand[i - lead];
    dims[i] = out[i];
    strides[i] = (od == 1) ? 0 : stride;
    stride *= od;
  }
  // Drop unit dims, merge neighbours that walk the operand the same way.
  int n = 0;
  for (size_t i = 0; i < r; ++i) {
    if (dims[i] == 1) continue;
    if (n > 0) {
      const int p = n - 1;
      const bool both_broadcast = strides_[p] == 0 && strides[i] == 0;
      const bool contiguous = strides[i] != 0 && strides_[p] == strides[i] * dims[i];
      if (both_broadcast || contiguous) {
        dims_[p] *= dims[i];
        strides_[p] = strides[i];
        continue;
      }
    }
    CUVIL_CHECK(n < kMaxRank, "broadcast: too many distinct dims after collapsing");
    dims_[n] = dims[i];
    strides_[n] = strides[i];
    ++n;
  }
  if (n == 0) {
    dims_[0] = 1;
    strides_[0] = 1;
    n = 1;
  }
  rank_ = n;
}

}  // namespace cuvil::runtime::cpu
