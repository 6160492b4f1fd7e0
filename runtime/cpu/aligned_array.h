// A 64-byte aligned array that owns its memory, for the packed weights kernels keep in
// Step::prepared. std::vector's storage is only 16-byte aligned (large blocks come from mmap at
// page + 16 bytes), so every 64-byte vector load of packed weights kept there spans two cache
// lines (docs/performance.md, "Aligned packed weights").
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace cuvil::runtime::cpu {

template <class T>
class AlignedArray {
 public:
  AlignedArray() = default;
  // `count` elements, zeroed.
  explicit AlignedArray(int64_t count) : count_(count) {
    const size_t bytes = (static_cast<size_t>(count) * sizeof(T) + 63) / 64 * 64;
    data_.reset(static_cast<T*>(std::aligned_alloc(64, bytes > 0 ? bytes : 64)));
    if (!data_) throw std::bad_alloc();
    std::memset(static_cast<void*>(data_.get()), 0, bytes > 0 ? bytes : 64);
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  int64_t size() const { return count_; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  int64_t count_ = 0;
};

}  // namespace cuvil::runtime::cpu
