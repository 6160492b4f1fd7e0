#include "runtime/cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "base/error.h"
#include "runtime/cpu/attrs.h"
#include "runtime/cpu/gemm_loops.h"
#include "runtime/cpu/gemv.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

// ---- packing ---------------------------------------------------------------------------------

// A[rows, cols] (row stride lda) into MR-row slivers dst[s][p][i], rows past `rows` zero.
template <int MR>
void pack_a_fixed(const float* a, int64_t lda, int64_t rows, int64_t cols, float* dst) {
  for (int64_t r0 = 0; r0 < rows; r0 += MR) {
    const int64_t mr = std::min<int64_t>(MR, rows - r0);
    float* d = dst + r0 * cols;
    if (mr == MR) {
      for (int64_t p = 0; p < cols; ++p) {
        for (int i = 0; i < MR; ++i) d[p * MR + i] = a[(r0 + i) * lda + p];
      }
    } else {
      for (int64_t p = 0; p < cols; ++p) {
        for (int i = 0; i < MR; ++i) d[p * MR + i] = i < mr ? a[(r0 + i) * lda + p] : 0.0f;
      }
    }
  }
}

void pack_a(int mr, const float* a, int64_t lda, int64_t rows, int64_t cols, float* dst) {
  switch (mr) {
    case 4:
      return pack_a_fixed<4>(a, lda, rows, cols, dst);
    case 6:
      return pack_a_fixed<6>(a, lda, rows, cols, dst);
    case 8:
      return pack_a_fixed<8>(a, lda, rows, cols, dst);
    case 12:
      return pack_a_fixed<12>(a, lda, rows, cols, dst);
    case 14:
      return pack_a_fixed<14>(a, lda, rows, cols, dst);
  }
  CUVIL_CHECK(false, "pack_a: no packing for MR=" + std::to_string(mr));
}

// B[rows=k, cols=n] into NR-column slivers dst[s][p][j], columns past `cols` zero. With
// `transposed` the source is B^T stored [n, k] with row stride ldb.
template <int NR>
void pack_b_fixed(const float* b, int64_t ldb, bool transposed, int64_t rows, int64_t cols,
                  float* dst) {
  for (int64_t j0 = 0; j0 < cols; j0 += NR) {
    const int64_t nr = std::min<int64_t>(NR, cols - j0);
    float* d = dst + j0 * rows;
    if (!transposed) {
      for (int64_t p = 0; p < rows; ++p) {
        const float* src = b + p * ldb + j0;
        float* dp = d + p * NR;
        if (nr == NR) {
          std::memcpy(dp, src, NR * sizeof(float));
        } else {
          for (int64_t j = 0; j < NR; ++j) dp[j] = j < nr ? src[j] : 0.0f;
        }
      }
      continue;
    }
    // Transposed source: walk it in 8-deep chunks so that reads stay contiguous per source row
    // and writes stay inside one small block.
    constexpr int64_t kChunk = 8;
    int64_t p0 = 0;
    for (; p0 + kChunk <= rows; p0 += kChunk) {
      for (int64_t j = 0; j < NR; ++j) {
        if (j < nr) {
          const float* src = b + (j0 + j) * ldb + p0;
          for (int64_t q = 0; q < kChunk; ++q) d[(p0 + q) * NR + j] = src[q];
        } else {
          for (int64_t q = 0; q < kChunk; ++q) d[(p0 + q) * NR + j] = 0.0f;
        }
      }
    }
    for (int64_t p = p0; p < rows; ++p) {
      for (int64_t j = 0; j < NR; ++j) d[p * NR + j] = j < nr ? b[(j0 + j) * ldb + p] : 0.0f;
    }
  }
}

void pack_b(int nr, const float* b, int64_t ldb, bool transposed, int64_t rows, int64_t cols,
            float* dst) {
  switch (nr) {
    case 16:
      return pack_b_fixed<16>(b, ldb, transposed, rows, cols, dst);
    case 24:
      return pack_b_fixed<24>(b, ldb, transposed, rows, cols, dst);
    case 32:
      return pack_b_fixed<32>(b, ldb, transposed, rows, cols, dst);
    case 64:
      return pack_b_fixed<64>(b, ldb, transposed, rows, cols, dst);
  }
  CUVIL_CHECK(false, "pack_b: no packing for NR=" + std::to_string(nr));
}

// ---- tracing ---------------------------------------------------------------------------------

std::atomic<bool> tracing{false};
std::mutex trace_mutex;
GemmTrace trace_state;

void record(const GemmTrace& t) {
  if (!tracing.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(trace_mutex);
  const int64_t calls = trace_state.calls + 1;
  trace_state = t;
  trace_state.calls = calls;
}

// ---- the parameters one call runs with ---------------------------------------------------------

struct Resolved {
  const MicroKernel* micro;
  int64_t mc, kc, nc;
  bool use_packed;
};

Resolved resolve(const GemmProblem& g) {
  const GemmIsa isa = g.blocking.portable ? GemmIsa::ref : active_gemm_isa();
  Resolved r;
  r.micro = &pick_micro_kernel(isa, g.blocking.mr, g.blocking.nr);
  // Prepacked B fixes NR and KC: use it when a micro-kernel of this instruction set has its NR.
  r.use_packed = false;
  if (g.packed_b != nullptr && g.packed_b->nr != r.micro->nr) {
    for (const MicroKernel& k : micro_kernels(isa)) {
      if (k.nr == g.packed_b->nr) {
        r.micro = &k;
        break;
      }
    }
  }
  if (g.packed_b != nullptr && g.packed_b->nr == r.micro->nr) r.use_packed = true;
  r.mc = round_up(std::max<int64_t>(1, g.blocking.mc), r.micro->mr);
  r.kc = r.use_packed ? g.packed_b->kc : std::max<int64_t>(1, g.blocking.kc);
  r.nc = round_up(std::max<int64_t>(1, g.blocking.nc), r.micro->nr);
  return r;
}

// ---- few rows: B read in place ---------------------------------------------------------------

// Columns [j0, j1) of every row, then bias and epilogue on them.
void few_rows(const GemmProblem& g, GemvFn gemv, int64_t j0, int64_t j1) {
  constexpr int64_t kCols = 256;  // columns per block: a block of C rows stays in L1
  for (int64_t jb = j0; jb < j1; jb += kCols) {
    const int64_t je = std::min(j1, jb + kCols);
    if (g.b_transposed) {
      gemv(g.m, g.k, g.a, g.lda, g.b, g.ldb, g.c, g.ldc, jb, je);
    } else {
      for (int64_t i = 0; i < g.m; ++i) {
        const float* a = g.a + i * g.lda;
        float* c = g.c + i * g.ldc;
        for (int64_t j = jb; j < je; ++j) c[j] = 0.0f;
        for (int64_t p = 0; p < g.k; ++p) {
          const float av = a[p];
          const float* b = g.b + p * g.ldb;
          for (int64_t j = jb; j < je; ++j) c[j] += av * b[j];
        }
      }
    }
    for (int64_t i = 0; i < g.m; ++i) {
      float* c = g.c + i * g.ldc;
      if (g.bias) {
        for (int64_t j = jb; j < je; ++j) c[j] += g.bias_per_row ? g.bias[i] : g.bias[j];
      }
      if (g.epilogue) g.epilogue->apply(c + jb, je - jb);
    }
  }
}

bool is_few_rows(const GemmProblem& g) {
  return gemm_reads_in_place(g.m);
}

// ---- the blocked loops (gemm_loops.h) with fp32 panels ----------------------------------------

// A packed per panel; B packed per panel, or read from weights packed at lowering (PackedB).
class F32Panels {
 public:
  F32Panels(const GemmProblem& g, const Resolved& r, ThreadPool& pool, int tid, int64_t rows)
      : g_(g), r_(r) {
    const int64_t kc_cap = std::min(r.kc, std::max<int64_t>(g.k, 1));
    ap_ = pool.scratch(tid, ThreadPool::kPackA,
                       static_cast<size_t>(std::min(r.mc, round_up(rows, mr())) * kc_cap));
    if (!r.use_packed) {
      bp_ = pool.scratch(tid, ThreadPool::kPackB,
                         static_cast<size_t>(std::min(r.nc, round_up(g.n, nr())) * kc_cap));
    }
    tile_ = pool.scratch(tid, ThreadPool::kTile, static_cast<size_t>(mr() * nr()));
    prefetching_ = g.blocking.prefetch_b ? r.micro->prefetching : nullptr;
  }
  GemmPanels panels() const { return {r_.mc, r_.kc, r_.nc}; }
  int mr() const { return r_.micro->mr; }
  int nr() const { return r_.micro->nr; }
  int64_t k_steps() const { return g_.k; }

  void begin_b_panel(int64_t j0, int64_t cols, int64_t p0, int64_t kc) {
    panel_j0_ = j0;
    if (r_.use_packed) {
      bpanel_ = g_.k > 0 ? g_.packed_b->block(p0, g_.packed_col0 + j0) : nullptr;
    } else if (g_.b_transposed) {
      pack_b(nr(), g_.b + j0 * g_.ldb + p0, g_.ldb, true, kc, cols, bp_);
      bpanel_ = bp_;
    } else {
      pack_b(nr(), g_.b + p0 * g_.ldb + j0, g_.ldb, false, kc, cols, bp_);
      bpanel_ = bp_;
    }
  }

  void pack_a(int64_t i0, int64_t rows, int64_t p0, int64_t kc) {
    cpu::pack_a(mr(), g_.a + i0 * g_.lda + p0, g_.lda, rows, kc, ap_);
  }

  void tile(const GemmTile& t) {
    const int MR = mr(), NR = nr();
    const float* a = ap_ + t.ir * t.kc;
    const float* b = bpanel_ + (t.j - panel_j0_) * t.kc;
    float* c = g_.c + t.i * g_.ldc + t.j;
    const bool full = t.rows == MR && t.cols == NR;
    if (full && prefetching_ && t.next_sliver) {
      // While one B sliver serves every row tile, the tiles prefetch the next sliver into L2 in
      // equal parts: its first use then finds it there, not in L3 or memory.
      const int64_t sliver_lines = t.kc * NR / 16;
      const int64_t part = ceil_div(sliver_lines, t.row_tiles);
      const int64_t first_line = t.row_tile * part;
      prefetching_(t.kc, a, b, c, g_.ldc, t.accumulate, b + NR * t.kc + first_line * 16,
                   std::max<int64_t>(0, std::min(part, sliver_lines - first_line)));
    } else if (full) {
      r_.micro->fn(t.kc, a, b, c, g_.ldc, t.accumulate);
    } else if (r_.micro->edge) {
      r_.micro->edge(t.kc, a, b, c, g_.ldc, t.accumulate, t.rows, t.cols);
    } else {
      // Edge tile: compute the whole register tile aside, keep the valid part.
      r_.micro->fn(t.kc, a, b, tile_, NR, false);
      store_tile_part(tile_, NR, c, g_.ldc, t.rows, t.cols, t.accumulate);
    }
  }

  void finish(int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
    if (!g_.bias && !g_.epilogue) return;
    for (int64_t i = i0; i < i0 + rows; ++i) {
      float* row = g_.c + i * g_.ldc + j0;
      if (g_.bias) {
        if (g_.bias_per_row) {
          const float bv = g_.bias[i];
          for (int64_t j = 0; j < cols; ++j) row[j] += bv;
        } else {
          const float* bv = g_.bias + j0;
          for (int64_t j = 0; j < cols; ++j) row[j] += bv[j];
        }
      }
      if (g_.epilogue) g_.epilogue->apply(row, cols);
    }
  }

 private:
  const GemmProblem& g_;
  const Resolved& r_;
  MicroKernelPrefetchFn prefetching_ = nullptr;
  float* ap_ = nullptr;
  float* bp_ = nullptr;
  float* tile_ = nullptr;
  const float* bpanel_ = nullptr;
  int64_t panel_j0_ = 0;
};

// Rows [i0, i1) x columns [j0, j1) of C on thread tid.
void blocked(const GemmProblem& g, const Resolved& r, ThreadPool& pool, int tid, int64_t i0,
             int64_t i1, int64_t j0, int64_t j1) {
  F32Panels panels(g, r, pool, tid, i1 - i0);
  gemm_loops(panels, i0, i1, j0, j1);
}

GemmTrace make_trace(const GemmProblem& g, const Resolved& r) {
  GemmTrace t;
  t.isa = r.micro->isa;
  t.mr = r.micro->mr;
  t.nr = r.micro->nr;
  t.mc = r.mc;
  t.kc = r.kc;
  t.nc = r.nc;
  t.used_prepacked = r.use_packed;
  t.few_rows = is_few_rows(g);
  return t;
}

}  // namespace

const char* to_string(GemmPartition partition) {
  switch (partition) {
    case GemmPartition::automatic:
      return "auto";
    case GemmPartition::m:
      return "m";
    case GemmPartition::n:
      return "n";
    case GemmPartition::grid:
      return "2d";
  }
  return "?";
}

GemmPartition parse_gemm_partition(const std::string& name) {
  if (name == "auto") return GemmPartition::automatic;
  if (name == "m") return GemmPartition::m;
  if (name == "n") return GemmPartition::n;
  if (name == "2d") return GemmPartition::grid;
  throw UserError("unknown GEMM partition '" + name + "' (expected auto, m, n or 2d)");
}

GemmBlocking gemm_blocking(const ir::Attrs& attrs) {
  GemmBlocking b;
  if (attrs.has(attrs::kGemmTile)) {
    const std::string tile = attrs.get_string(attrs::kGemmTile, "");
    int mr = 0, nr = 0;
    char tail = 0;
    if (std::sscanf(tile.c_str(), "%dx%d%c", &mr, &nr, &tail) != 2 || mr <= 0 || nr <= 0) {
      throw UserError("gemm.mr_nr: expected MRxNR such as 12x32, got '" + tile + "'");
    }
    b.mr = mr;
    b.nr = nr;
  }
  auto positive = [&](const char* key, int64_t fallback) {
    const int64_t v = attrs.get_int(key, fallback);
    if (v < 1) throw UserError(std::string(key) + " must be positive, got " + std::to_string(v));
    return v;
  };
  b.mc = positive(attrs::kGemmMc, b.mc);
  b.kc = positive(attrs::kGemmKc, b.kc);
  b.nc = positive(attrs::kGemmNc, b.nc);
  b.prefetch_b = attrs.get_int(attrs::kGemmPrefetchB, 1) != 0;
  b.partition = gemm_partition(attrs);
  return b;
}

GemmPartition gemm_partition(const ir::Attrs& attrs) {
  return parse_gemm_partition(attrs.get_string(attrs::kGemmPartition, "auto"));
}

PackedB pack_b_ahead(const float* b, int64_t ldb, bool transposed, int64_t k, int64_t n, int64_t kc,
                     int nr, ThreadPool* pool) {
  PackedB p;
  p.k = k;
  p.n = n;
  p.kc = std::max<int64_t>(1, kc);
  p.nr = nr;
  p.n_padded = round_up(std::max<int64_t>(n, 1), nr);
  const size_t bytes =
      round_up(static_cast<int64_t>(sizeof(float)) * p.n_padded * std::max<int64_t>(k, 1), 64);
  float* data = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (data == nullptr) throw std::bad_alloc();
  p.data = std::shared_ptr<float>(data, std::free);
  const int64_t blocks = (k + p.kc - 1) / p.kc;
  const int64_t slivers = p.n_padded / nr;
  // One task per (KC block, group of slivers); every task writes a disjoint range.
  const int64_t group = 8;
  const int64_t groups = (slivers + group - 1) / group;
  auto work = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t pc = t / groups * p.kc, s0 = t % groups * group;
      const int64_t kcb = std::min(p.kc, k - pc);
      const int64_t j0 = s0 * nr, j1 = std::min(n, (s0 + group) * nr);
      if (j0 >= n) continue;
      float* dst = data + pc * p.n_padded + s0 * kcb * nr;
      const float* src = transposed ? b + j0 * ldb + pc : b + pc * ldb + j0;
      pack_b(nr, src, ldb, transposed, kcb, j1 - j0, dst);
    }
  };
  if (pool != nullptr) {
    pool->parallel_for(blocks * groups, work);
  } else {
    work(0, blocks * groups);
  }
  return p;
}

void set_gemm_tracing(bool on) {
  std::lock_guard<std::mutex> lock(trace_mutex);
  tracing.store(on);
  trace_state = GemmTrace{};
}

GemmTrace last_gemm_trace() {
  std::lock_guard<std::mutex> lock(trace_mutex);
  return trace_state;
}

void gemm_serial(const GemmProblem& g, ThreadPool& pool, int tid) {
  if (g.m <= 0 || g.n <= 0) return;
  const Resolved r = resolve(g);
  GemmTrace t = make_trace(g, r);
  t.partition = GemmPartition::n;
  record(t);
  if (is_few_rows(g)) {
    few_rows(g, pick_gemv_bt(r.micro->isa), 0, g.n);
    return;
  }
  blocked(g, r, pool, tid, 0, g.m, 0, g.n);
}

void gemm(const GemmProblem& g, ThreadPool& pool) {
  if (g.m <= 0 || g.n <= 0) return;
  const int threads = pool.threads();
  const Resolved r = resolve(g);
  // B released after prepacking (KernelInfo::replaced_inputs): only the packed panels may be read.
  CUVIL_CHECK(g.b != nullptr || (r.use_packed && !is_few_rows(g)),
              "gemm: B's unpacked values were released, but this problem cannot read the packed "
              "panels");
  GemmTrace trace = make_trace(g, r);
  if (is_few_rows(g)) {
    // Bound by reading B: contiguous column ranges per thread, 64 columns at a time.
    const GemvFn gemv = pick_gemv_bt(r.micro->isa);
    const int64_t chunks = (g.n + 63) / 64;
    trace.partition = GemmPartition::n;
    trace.parts = static_cast<int>(std::min<int64_t>(threads, chunks));
    record(trace);
    pool.parallel_for(chunks, [&](int64_t b0, int64_t b1) {
      few_rows(g, gemv, b0 * 64, std::min(g.n, b1 * 64));
    });
    return;
  }
  const GemmSplit split =
      plan_gemm_split(threads, g.m, g.n, g.k, r.micro->mr, r.micro->nr, g.blocking.partition);
  trace.partition = split.resolved();
  trace.parts = static_cast<int>(split.parts());
  record(trace);
  run_gemm_split(pool, split, g.m, g.n,
                 [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1, int tid) {
                   blocked(g, r, pool, tid, i0, i1, j0, j1);
                 });
}

}  // namespace cuvil::runtime::cpu
