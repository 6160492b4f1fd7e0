// Flash-style scaled dot-product attention. Keys of each (batch, kv head) are packed once into
// K^T panels of 32 keys ([D][32], zero-padded) so that a register tile of query rows x 32 keys
// needs only broadcasts and contiguous loads. A task is (batch, kv head, block of stacked query
// rows); it walks the keys in tiles: S = Q K^T (Q pre-scaled by scale*log2 e, so exp becomes
// exp2), an online softmax per row (running max m and sum l, the accumulator rescaled by
// 2^(m_old - m_new)), then O = alpha O + P V. Stacked rows are position-major (row r is query
// position r / group of head r % group), so a causal block covers consecutive positions and whole
// key tiles past its last position are skipped.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/attention.h"
#include "runtime/cpu/elementwise_math_avx512.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/cpu/kernels.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

constexpr int64_t kPanel = 32;  // keys per packed K^T panel
constexpr int kQkRows = 12;     // query rows per Q K^T register tile (x 32 keys)
constexpr int kPvRows = 6;      // rows per P V register tile
constexpr int kPvVectors = 4;   // 16-float vectors of output columns per P V tile
constexpr int64_t kPvCols = 16 * kPvVectors;
constexpr float kLog2e = 1.44269504088896340736f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Dims {
  int64_t batch, hq, hkv, group, sq, skv, d, dv;
  bool causal;
  float qscale;  // scale * log2(e)
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

#ifdef __AVX512F__

// s[r][0:32] = sum_t q[r*d + t] * kp[t][0:32] for R rows.
template <int R>
void qk_tile(const float* q, int64_t d, const float* kp, float* s, int64_t lds) {
  __m512 c0[R], c1[R];
  for (int r = 0; r < R; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
  for (int64_t t = 0; t < d; ++t) {
    const __m512 b0 = _mm512_loadu_ps(kp + t * kPanel);
    const __m512 b1 = _mm512_loadu_ps(kp + t * kPanel + 16);
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(q[r * d + t]);
      c0[r] = _mm512_fmadd_ps(a, b0, c0[r]);
      c1[r] = _mm512_fmadd_ps(a, b1, c1[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(s + r * lds, c0[r]);
    _mm512_storeu_ps(s + r * lds + 16, c1[r]);
  }
}

// o[r][cols] = alpha[r] * o[r][cols] + sum_j p[r][j] v[j][cols] over C vectors of columns starting
// at v/o; the last vector is masked by `last`.
template <int R, int C>
void pv_tile(const float* p, int64_t ldp, int64_t n, const float* v, int64_t ldv,
             const float* alpha, float* o, int64_t ldo, __mmask16 last) {
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r) {
    const __m512 al = _mm512_set1_ps(alpha[r]);
    for (int c = 0; c < C; ++c) {
      const __mmask16 m = c == C - 1 ? last : static_cast<__mmask16>(0xffff);
      acc[r][c] = _mm512_mul_ps(al, _mm512_maskz_loadu_ps(m, o + r * ldo + 16 * c));
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    __m512 b[C];
    for (int c = 0; c < C; ++c) {
      const __mmask16 m = c == C - 1 ? last : static_cast<__mmask16>(0xffff);
      b[c] = _mm512_maskz_loadu_ps(m, v + j * ldv + 16 * c);
    }
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(p[r * ldp + j]);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      const __mmask16 m = c == C - 1 ? last : static_cast<__mmask16>(0xffff);
      _mm512_mask_storeu_ps(o + r * ldo + 16 * c, m, acc[r][c]);
    }
  }
}

template <int C>
void pv_rows(int rows, const float* p, int64_t ldp, int64_t n, const float* v, int64_t ldv,
             const float* alpha, float* o, int64_t ldo, __mmask16 last) {
  switch (rows) {
    case 1:
      return pv_tile<1, C>(p, ldp, n, v, ldv, alpha, o, ldo, last);
    case 2:
      return pv_tile<2, C>(p, ldp, n, v, ldv, alpha, o, ldo, last);
    case 3:
      return pv_tile<3, C>(p, ldp, n, v, ldv, alpha, o, ldo, last);
    case 4:
      return pv_tile<4, C>(p, ldp, n, v, ldv, alpha, o, ldo, last);
    case 5:
      return pv_tile<5, C>(p, ldp, n, v, ldv, alpha, o, ldo, last);
    default:
      return pv_tile<6, C>(p, ldp, n, v, ldv, alpha, o, ldo, last);
  }
}

void qk_rows(int rows, const float* q, int64_t d, const float* kp, float* s, int64_t lds) {
  switch (rows) {
    case 1:
      return qk_tile<1>(q, d, kp, s, lds);
    case 2:
      return qk_tile<2>(q, d, kp, s, lds);
    case 3:
      return qk_tile<3>(q, d, kp, s, lds);
    case 4:
      return qk_tile<4>(q, d, kp, s, lds);
    case 5:
      return qk_tile<5>(q, d, kp, s, lds);
    case 6:
      return qk_tile<6>(q, d, kp, s, lds);
    case 7:
      return qk_tile<7>(q, d, kp, s, lds);
    case 8:
      return qk_tile<8>(q, d, kp, s, lds);
    case 9:
      return qk_tile<9>(q, d, kp, s, lds);
    case 10:
      return qk_tile<10>(q, d, kp, s, lds);
    case 11:
      return qk_tile<11>(q, d, kp, s, lds);
    default:
      return qk_tile<12>(q, d, kp, s, lds);
  }
}

// P = 2^(S - m_new) over the `valid` first entries, 0 over [valid, n); updates m and l and
// returns the accumulator's rescale factor 2^(m_old - m_new).
float online_softmax_row(float* s, int64_t valid, int64_t n, float& m, float& l) {
  __m512 vmax = _mm512_set1_ps(kNegInf);
  for (int64_t j = 0; j < valid; j += 16) {
    const __mmask16 k = avx512::first_lanes(valid - j);
    vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(_mm512_set1_ps(kNegInf), k, s + j));
  }
  const float m_new = std::max(m, _mm512_reduce_max_ps(vmax));
  const float alpha = m == kNegInf ? 0.0f : std::exp2(m - m_new);
  const __m512 vm = _mm512_set1_ps(m_new);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = avx512::first_lanes(valid - j > 0 ? valid - j : 0);
    const __mmask16 all = avx512::first_lanes(n - j);
    const __m512 e =
        _mm512_maskz_mov_ps(k, avx512::exp2(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + j), vm)));
    _mm512_mask_storeu_ps(s + j, all, e);
    sum = _mm512_add_ps(sum, e);
  }
  l = l * alpha + _mm512_reduce_add_ps(sum);
  m = m_new;
  return alpha;
}

#else  // portable fallback

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

#endif

// O[rows, dv] = alpha * O + P[rows, n] V[n, dv].
void pv_block(int64_t rows, const float* p, int64_t ldp, int64_t n, const float* v, int64_t dv,
              const float* alpha, float* o) {
#ifdef __AVX512F__
  for (int64_t c0 = 0; c0 < dv; c0 += kPvCols) {
    const int64_t cols = std::min(kPvCols, dv - c0);
    const int vectors = static_cast<int>((cols + 15) / 16);
    const __mmask16 last = avx512::first_lanes(cols - 16 * (vectors - 1));
    for (int64_t r = 0; r < rows; r += kPvRows) {
      const int nr = static_cast<int>(std::min<int64_t>(kPvRows, rows - r));
      const float* pr = p + r * ldp;
      float* orow = o + r * dv + c0;
      switch (vectors) {
        case 1:
          pv_rows<1>(nr, pr, ldp, n, v + c0, dv, alpha + r, orow, dv, last);
          break;
        case 2:
          pv_rows<2>(nr, pr, ldp, n, v + c0, dv, alpha + r, orow, dv, last);
          break;
        case 3:
          pv_rows<3>(nr, pr, ldp, n, v + c0, dv, alpha + r, orow, dv, last);
          break;
        default:
          pv_rows<4>(nr, pr, ldp, n, v + c0, dv, alpha + r, orow, dv, last);
          break;
      }
    }
  }
#else
  for (int64_t r = 0; r < rows; ++r) {
    float* orow = o + r * dv;
    for (int64_t c = 0; c < dv; ++c) orow[c] *= alpha[r];
    for (int64_t j = 0; j < n; ++j) {
      const float pj = p[r * ldp + j];
      for (int64_t c = 0; c < dv; ++c) orow[c] += pj * v[j * dv + c];
    }
  }
#endif
}

Dims dims_of(const Step& step) {
  const ir::Shape& qs = step.input_shapes[0];
  const ir::Shape& ks = step.input_shapes[1];
  const ir::Shape& vs = step.input_shapes[2];
  Dims m{};
  m.batch = qs[0], m.hq = qs[1], m.sq = qs[2], m.d = qs[3];
  m.hkv = ks[1], m.skv = ks[2], m.dv = vs[3];
  m.group = m.hq / m.hkv;
  m.causal = step.attrs.get_int("causal", 0) != 0;
  const double scale = step.attrs.get_float("scale", 1.0 / std::sqrt(static_cast<double>(m.d)));
  m.qscale = static_cast<float>(scale * 1.44269504088896340736);
  return m;
}

}  // namespace

void sdpa_flash(const KernelArgs& a) {
  const Dims m = dims_of(a.step);
  const Epilogue epi(a.step, a.in, a.out);
  const int64_t rows = m.group * m.sq;  // stacked query rows per (batch, kv head)
  const int64_t bq =
      std::clamp<int64_t>(a.step.attrs.get_int("attention.block_q", kFlashBlockQ), 1, rows);
  const int64_t skv_panels = (m.skv + kPanel - 1) / kPanel;
  const int64_t bkv_req = a.step.attrs.get_int("attention.block_kv", kFlashBlockKv);
  const int64_t bkv =  // keys per tile: whole panels, no more than the keys there are
      std::min(std::max<int64_t>(1, (bkv_req + kPanel - 1) / kPanel), skv_panels) * kPanel;
  const int64_t heads = m.batch * m.hkv;
  const int64_t head_pack = skv_panels * kPanel * m.d;

  // Pack every head's keys once; the buffer (thread 0's slot) is shared read-only afterwards.
  float* kpack = a.pool.scratch(0, ThreadPool::kKernel2, static_cast<size_t>(heads * head_pack));
  a.pool.parallel_for(heads * skv_panels, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t h = t / skv_panels, p = t % skv_panels;
      pack_k_panel(a.in[1] + h * m.skv * m.d, m.skv, m.d, p,
                   kpack + h * head_pack + p * kPanel * m.d);
    }
  });

  const int64_t blocks = (rows + bq - 1) / bq;
  a.pool.parallel_for_tid(heads * blocks, [&](int tid, int64_t t0, int64_t t1) {
    float* qs =
        a.pool.scratch(tid, ThreadPool::kKernel, static_cast<size_t>(bq * (m.d + bkv + m.dv + 3)));
    float* s = qs + bq * m.d;
    float* o = s + bq * bkv;
    float* rmax = o + bq * m.dv;
    float* rsum = rmax + bq;
    float* alpha = rsum + bq;
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
        for (int64_t t2 = 0; t2 < m.d; ++t2) qs[i * m.d + t2] = src[t2] * m.qscale;
      }
      std::fill(o, o + nr * m.dv, 0.0f);
      std::fill(rmax, rmax + nr, kNegInf);
      std::fill(rsum, rsum + nr, 0.0f);
      const float* kp = kpack + bh * head_pack;
      const float* v = a.in[2] + bh * m.skv * m.dv;
      const int64_t last_key = key_limit(r0 + nr - 1);  // rows are in position order
      for (int64_t j0 = 0; j0 < last_key; j0 += bkv) {
        const int64_t n = std::min(bkv, last_key - j0);
        for (int64_t pj = 0; pj < n; pj += kPanel) {
          const float* panel = kp + (j0 + pj) * m.d;  // panel (j0 + pj) / 32
          for (int64_t i = 0; i < nr; i += kQkRows) {
            qk_rows(static_cast<int>(std::min<int64_t>(kQkRows, nr - i)), qs + i * m.d, m.d, panel,
                    s + i * bkv + pj, bkv);
          }
        }
        for (int64_t i = 0; i < nr; ++i) {
          const int64_t valid = std::min(n, key_limit(r0 + i) - j0);
          float* srow = s + i * bkv;
          if (valid <= 0) {
            std::fill(srow, srow + n, 0.0f);
            alpha[i] = 1.0f;
          } else {
            alpha[i] = online_softmax_row(srow, valid, n, rmax[i], rsum[i]);
          }
        }
        pv_block(nr, s, bkv, n, v + j0 * m.dv, m.dv, alpha, o);
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

void sdpa_auto(const KernelArgs& a) {
  const Dims m = dims_of(a.step);
  // Decode-like: a handful of rows per kv head cannot amortise packing the keys.
  if (m.group * m.sq <= 16) {
    sdpa_blocked(a);
  } else {
    sdpa_flash(a);
  }
}

}  // namespace cuvil::runtime::cpu
