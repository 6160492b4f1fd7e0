// Flash-style scaled dot-product attention. Keys of each (batch, kv head) are packed once into
// K^T panels of 32 keys ([D][32], zero-padded) so that a register tile of query rows x 32 keys
// needs only broadcasts and contiguous loads. A task is (batch, kv head, block of stacked query
// rows); it walks the keys in tiles: S = Q K^T (Q pre-scaled by scale*log2 e, so exp becomes
// exp2), an online softmax per row (running max m and sum l, the accumulator rescaled by
// 2^(m_old - m_new)), then O = alpha O + P V. Stacked rows are position-major (row r is query
// position r / group of head r % group), so a causal block covers consecutive positions and whole
// key tiles past its last position are skipped. sdpa.flash_bf16 runs the same loop with K, V and
// the scaled Q packed as bf16 pairs and P rounded to bf16 before P V (attention_flash_bf16.cc).
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/attention.h"
#include "runtime/cpu/attention_flash_kernels.h"
#include "runtime/cpu/attrs.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/quantize.h"
#include "runtime/kernel_table.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

KernelIsa sdpa_flash_isa() {
  return kernel_isa();
}

namespace {

constexpr int64_t kPanel = kFlashPanel;
constexpr int kQkRows = kFlashQkRows;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Dims {
  int64_t batch, hq, hkv, group, sq, skv, d, dv;
  bool causal;   // from the schedule
  float qscale;  // the schedule's scale * log2(e)
};

// Keys [32p, 32p + 32) of one head's K[skv, d] as [d][32], zero-padded past skv.
void pack_k_panel(const float* k, int64_t skv, int64_t d, int64_t p, float* dst) {
  const int64_t j0 = p * kPanel, n = std::min(kPanel, skv - j0);
  for (int64_t t = 0; t < d; ++t) {
    float* row = dst + t * kPanel;
    for (int64_t j = 0; j < n; ++j) row[j] = k[(j0 + j) * d + t];
    for (int64_t j = n; j < kPanel; ++j) row[j] = 0.0f;
  }
}

// Keys [32p, 32p + 32) of one head's K[skv, d] as [dp][32] words of head-dim pairs (bf16), zero
// past skv and past d.
void pack_k_panel_bf16(const float* k, int64_t skv, int64_t d, int64_t p, uint32_t* dst) {
  const int64_t j0 = p * kPanel, n = std::min(kPanel, skv - j0), dp = (d + 1) / 2;
  for (int64_t t = 0; t < dp; ++t) {
    uint32_t* row = dst + t * kPanel;
    for (int64_t j = 0; j < n; ++j) {
      const float* key = k + (j0 + j) * d;
      row[j] = bf16_pair(key[2 * t], 2 * t + 1 < d ? key[2 * t + 1] : 0.0f);
    }
    for (int64_t j = n; j < kPanel; ++j) row[j] = 0;
  }
}

// Keys [32p, 32p + 32) of one head's V[skv, dv] as 16 rows of dv words, row i holding keys
// 32p + 2i and 32p + 2i + 1 of each column (bf16), zero past skv.
void pack_v_panel_bf16(const float* v, int64_t skv, int64_t dv, int64_t p, uint32_t* dst) {
  for (int64_t i = 0; i < kPanel / 2; ++i) {
    const int64_t j = p * kPanel + 2 * i;
    uint32_t* row = dst + i * dv;
    for (int64_t c = 0; c < dv; ++c) {
      row[c] = bf16_pair(j < skv ? v[j * dv + c] : 0.0f, j + 1 < skv ? v[(j + 1) * dv + c] : 0.0f);
    }
  }
}

// The portable micro-kernels (the reference of attention_flash_avx512.cc's and _avx2.cc's).
void qk_rows(int rows, const float* q, int64_t d, const float* kp, float* s, int64_t lds) {
  for (int r = 0; r < rows; ++r) {
    float acc[kPanel] = {};
    for (int64_t t = 0; t < d; ++t) {
      for (int64_t j = 0; j < kPanel; ++j) acc[j] += q[r * d + t] * kp[t * kPanel + j];
    }
    std::copy(acc, acc + kPanel, s + r * lds);
  }
}

float online_softmax_row(float* s, int64_t valid, int64_t n, float& m, float& l) {
  float mx = kNegInf;
  for (int64_t j = 0; j < valid; ++j) mx = std::max(mx, s[j]);
  const float m_new = std::max(m, mx);
  const float alpha = m == kNegInf ? 0.0f : std::exp2(m - m_new);
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = j < valid ? std::exp2(s[j] - m_new) : 0.0f;
    sum += s[j];
  }
  l = l * alpha + sum;
  m = m_new;
  return alpha;
}

// O[rows, dv] = alpha * O + P[rows, n] V[n, dv].
void pv_block(int64_t rows, const float* p, int64_t ldp, int64_t n, const float* v, int64_t dv,
              const float* alpha, float* o) {
  for (int64_t r = 0; r < rows; ++r) {
    float* orow = o + r * dv;
    for (int64_t c = 0; c < dv; ++c) orow[c] *= alpha[r];
    for (int64_t j = 0; j < n; ++j) {
      const float pj = p[r * ldp + j];
      for (int64_t c = 0; c < dv; ++c) orow[c] += pj * v[j * dv + c];
    }
  }
}

constexpr FlashKernels kPortable{qk_rows, online_softmax_row, pv_block};

const FlashKernels& flash_kernels() {
  return set_for_isa(sdpa_flash_isa(), flash_kernels_avx512(), flash_kernels_avx2(), kPortable);
}

Dims dims_of(const Step& step) {
  const ir::Shape& qs = step.input_shapes[0];
  const ir::Shape& ks = step.input_shapes[1];
  const ir::Shape& vs = step.input_shapes[2];
  Dims m{};
  m.batch = qs[0], m.hq = qs[1], m.sq = qs[2], m.d = qs[3];
  m.hkv = ks[1], m.skv = ks[2], m.dv = vs[3];
  m.group = m.hq / m.hkv;
  return m;
}

// The attributes every sdpa kernel reads: the mask and the scale.
std::shared_ptr<SdpaSchedule> semantics_of(const Step& step) {
  auto s = std::make_shared<SdpaSchedule>();
  s->causal = step.attrs.get_int("causal", 0) != 0;
  s->scale = step.attrs.get_float(
      "scale", 1.0 / std::sqrt(static_cast<double>(step.input_shapes.at(0).at(3))));
  return s;
}

}  // namespace

std::shared_ptr<const void> sdpa_blocked_schedule(const Step& step) {
  auto s = semantics_of(step);
  s->flash = false;
  return s;
}

std::shared_ptr<const void> sdpa_flash_schedule(const Step& step) {
  const Dims m = dims_of(step);
  const int64_t rows = m.group * m.sq;  // stacked query rows per (batch, kv head)
  const int64_t skv_panels = (m.skv + kPanel - 1) / kPanel;
  auto s = semantics_of(step);
  s->block_q = std::clamp<int64_t>(step.attrs.get_int(attrs::kAttentionBlockQ, kFlashBlockQ), 1,
                                   std::max<int64_t>(rows, 1));
  const int64_t bkv_req = step.attrs.get_int(attrs::kAttentionBlockKv, kFlashBlockKv);
  s->block_kv =  // keys per tile: whole panels, no more than the keys there are
      std::min(std::max<int64_t>(1, (bkv_req + kPanel - 1) / kPanel), skv_panels) * kPanel;
  return s;
}

std::shared_ptr<const void> sdpa_auto_schedule(const Step& step) {
  const Dims m = dims_of(step);
  // Decode-like: a handful of rows per kv head cannot amortise packing the keys.
  if (!flash_pays(m.group * m.sq)) return sdpa_blocked_schedule(step);
  // On the portable tiles the blocked kernel's two GEMMs (which have AVX2 and AVX-512 tiles of
  // their own) were 1.6-1.7x faster on SDXL's and Llama's prefill shapes (cuvil-micro-attention,
  // docs/performance.md); with AVX2 or AVX-512 tiles flash attention was faster.
  if (sdpa_flash_isa() == KernelIsa::portable) return sdpa_blocked_schedule(step);
  return sdpa_flash_schedule(step);
}

namespace {

// sdpa.flash (kBf16 false) and sdpa.flash_bf16: the same tiles, online softmax and masks; bf16
// packs K, V and the scaled Q as pairs and rounds P to bf16 before P V.
template <bool kBf16>
void run_flash(const KernelArgs& a) {
  const SdpaSchedule& schedule = schedule_of<SdpaSchedule>(a.step);
  Dims m = dims_of(a.step);
  m.causal = schedule.causal;
  m.qscale = static_cast<float>(schedule.scale * 1.44269504088896340736);
  const Epilogue epi(a.step, a.in, a.out);
  const FlashKernels& kern = flash_kernels();
  const FlashBf16Kernels& bf16_kern = flash_kernels_bf16();  // only called when kBf16
  const int64_t rows = m.group * m.sq;  // stacked query rows per (batch, kv head)
  const int64_t bq = schedule.block_q;
  const int64_t bkv = schedule.block_kv;
  const int64_t skv_panels = (m.skv + kPanel - 1) / kPanel;
  const int64_t heads = m.batch * m.hkv;
  const int64_t dp = (m.d + 1) / 2;  // bf16: pairs of head dims
  // Per head, in 4-byte units: K's panels, then (bf16) V's.
  const int64_t k_pack = skv_panels * kPanel * (kBf16 ? dp : m.d);
  const int64_t head_pack = k_pack + (kBf16 ? skv_panels * kPanel / 2 * m.dv : 0);

  // Pack every head's keys (and, in bf16, values) once; the buffer (thread 0's slot) is shared
  // read-only afterwards.
  float* pack = a.pool.scratch(0, ThreadPool::kKernel2, static_cast<size_t>(heads * head_pack));
  a.pool.parallel_for(heads * skv_panels, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t h = t / skv_panels, p = t % skv_panels;
      float* head = pack + h * head_pack;
      if constexpr (kBf16) {
        auto* words = reinterpret_cast<uint32_t*>(head);
        pack_k_panel_bf16(a.in[1] + h * m.skv * m.d, m.skv, m.d, p, words + p * kPanel * dp);
        pack_v_panel_bf16(a.in[2] + h * m.skv * m.dv, m.skv, m.dv, p,
                          words + k_pack + p * kPanel / 2 * m.dv);
      } else {
        pack_k_panel(a.in[1] + h * m.skv * m.d, m.skv, m.d, p, head + p * kPanel * m.d);
      }
    }
  });

  const int64_t blocks = (rows + bq - 1) / bq;
  a.pool.parallel_for_tid(heads * blocks, [&](int tid, int64_t t0, int64_t t1) {
    // Q (fp32, or dp words), S, O, the row statistics, then (bf16) P as pairs of keys.
    float* qs = a.pool.scratch(
        tid, ThreadPool::kKernel,
        static_cast<size_t>(bq * (m.d + bkv + m.dv + 3) + (kBf16 ? bq * bkv / 2 : 0)));
    float* s = qs + bq * m.d;
    float* o = s + bq * bkv;
    float* rmax = o + bq * m.dv;
    float* rsum = rmax + bq;
    float* alpha = rsum + bq;
    auto* q_words = reinterpret_cast<uint32_t*>(qs);
    auto* p_words = reinterpret_cast<uint32_t*>(alpha + bq);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t bh = t / blocks, r0 = (t % blocks) * bq;
      const int64_t nr = std::min(bq, rows - r0);
      const int64_t b = bh / m.hkv, kvh = bh % m.hkv;
      // Stacked row r: position r / group of query head kvh * group + r % group.
      auto q_row = [&](int64_t r) {
        return ((b * m.hq + kvh * m.group + r % m.group) * m.sq + r / m.group);
      };
      auto key_limit = [&](int64_t r) {  // keys [0, limit) are visible to row r
        return m.causal ? r / m.group + m.skv - m.sq + 1 : m.skv;
      };
      for (int64_t i = 0; i < nr; ++i) {
        const float* src = a.in[0] + q_row(r0 + i) * m.d;
        if constexpr (kBf16) {
          bf16_kern.round_row(src, m.d, m.qscale, reinterpret_cast<uint16_t*>(q_words + i * dp));
        } else {
          for (int64_t t2 = 0; t2 < m.d; ++t2) qs[i * m.d + t2] = src[t2] * m.qscale;
        }
      }
      std::fill(o, o + nr * m.dv, 0.0f);
      std::fill(rmax, rmax + nr, kNegInf);
      std::fill(rsum, rsum + nr, 0.0f);
      const float* head = pack + bh * head_pack;
      const float* v = a.in[2] + bh * m.skv * m.dv;
      const int64_t last_key = key_limit(r0 + nr - 1);  // rows are in position order
      for (int64_t j0 = 0; j0 < last_key; j0 += bkv) {
        const int64_t n = std::min(bkv, last_key - j0);
        for (int64_t pj = 0; pj < n; pj += kPanel) {
          const int64_t panel = (j0 + pj) / kPanel;
          for (int64_t i = 0; i < nr; i += kQkRows) {
            const int qk_rows = static_cast<int>(std::min<int64_t>(kQkRows, nr - i));
            if constexpr (kBf16) {
              bf16_kern.qk_rows(qk_rows, q_words + i * dp, dp,
                                reinterpret_cast<const uint32_t*>(head) + panel * kPanel * dp,
                                s + i * bkv + pj, bkv);
            } else {
              kern.qk_rows(qk_rows, qs + i * m.d, m.d, head + panel * kPanel * m.d,
                           s + i * bkv + pj, bkv);
            }
          }
        }
        for (int64_t i = 0; i < nr; ++i) {
          const int64_t valid = std::min(n, key_limit(r0 + i) - j0);
          float* srow = s + i * bkv;
          if (valid <= 0) {
            std::fill(srow, srow + n, 0.0f);
            alpha[i] = 1.0f;
          } else {
            alpha[i] = kern.online_softmax_row(srow, valid, n, rmax[i], rsum[i]);
          }
          if constexpr (kBf16) {
            bf16_kern.round_row(srow, n, 1.0f, reinterpret_cast<uint16_t*>(p_words) + i * bkv);
          }
        }
        if constexpr (kBf16) {
          // j0 is a multiple of 32: the tile's keys start on a pair.
          const auto* v_pairs = reinterpret_cast<const uint32_t*>(head) + k_pack + j0 / 2 * m.dv;
          bf16_kern.pv_block(nr, p_words, bkv / 2, (n + 1) / 2, v_pairs, m.dv, alpha, o);
        } else {
          kern.pv_block(nr, s, bkv, n, v + j0 * m.dv, m.dv, alpha, o);
        }
      }
      for (int64_t i = 0; i < nr; ++i) {
        float* dst = a.out + q_row(r0 + i) * m.dv;
        const float inv = 1.0f / rsum[i];
        for (int64_t c = 0; c < m.dv; ++c) dst[c] = o[i * m.dv + c] * inv;
        if (!epi.empty()) epi.apply(dst, m.dv);
      }
    }
  });
}

}  // namespace

void sdpa_flash(const KernelArgs& a) {
  run_flash<false>(a);
}

void sdpa_flash_bf16(const KernelArgs& a) {
  run_flash<true>(a);
}

void sdpa_auto(const KernelArgs& a) {
  if (schedule_of<SdpaSchedule>(a.step).flash) {
    sdpa_flash(a);
  } else {
    sdpa_blocked(a);
  }
}

}  // namespace cuvil::runtime::cpu
