#include "runtime/cuda/codegen/elementwise.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace cuvil::runtime::cuda::codegen {

namespace {

// Storage type of each input, in order (input 0, then one per binary step).
std::vector<ElemType> input_types(const ElementwiseProblem& p) {
  std::vector<ElemType> types = {p.input};
  for (const EpilogueStepSpec& step : p.steps) {
    if (is_binary_step(step.op)) types.push_back(step.operand_type);
  }
  return types;
}

// Whole chunks of VW elements move as one vector access per tensor (<= 16 bytes each).
bool vectorized(const ElementwiseProblem& p, const ElementwiseTiles& t) {
  if (!p.all_contiguous || t.vector_width < 2 || (t.vector_width & (t.vector_width - 1)) != 0)
    return false;
  std::vector<ElemType> types = input_types(p);
  types.push_back(p.output);
  for (ElemType type : types) {
    if (t.vector_width * elem_bytes(type) > 16) return false;
  }
  return true;
}

// The chain for element `i`: x = input 0 at off0, step by step; binary step k reads input k+1 at
// off<k+1>. Offsets are variables named off0, off1, ... in scope. With `chunked`, input k is
// element v of chunk variable c<k> and the result goes to element v of chunk `out`.
std::string chain_code(const ElementwiseProblem& p, bool chunked = false) {
  const std::vector<ElemType> types = input_types(p);
  auto input = [&](int k) {
    const std::string index = std::to_string(k);
    std::string chunk_element = "c";  // built by appending: GCC 12 -Wrestrict false positive
    chunk_element += index;
    chunk_element += ".v[v]";
    std::string pointer = "p.inputs[";
    pointer += index;
    pointer += "]";
    std::string offset = "off";
    offset += index;
    return chunked ? to_f32_expr(types[k], chunk_element) : load_expr(types[k], pointer, offset);
  };
  std::string code = "float x = " + input(0) + ";\n";
  int operand = 1;
  for (const EpilogueStepSpec& step : p.steps) {
    if (!is_binary_step(step.op)) {
      code += "x = cuvil_" + std::string(ir::to_string(step.op)) + "(x);\n";
      continue;
    }
    const std::string rhs = input(operand++);
    const char* symbol = step.op == ir::OpKind::add   ? "+"
                         : step.op == ir::OpKind::sub ? "-"
                         : step.op == ir::OpKind::mul ? "*"
                                                      : "/";
    code += "x = x " + std::string(symbol) + " " + rhs + ";\n";
  }
  code += chunked ? "out.v[v] = " + from_f32_expr(p.output, "x") + ";\n"
                  : store_stmt(p.output, "p.out", "i", "x") + "\n";
  return code;
}

}  // namespace

void validate_elementwise(const ElementwiseProblem& p, const ElementwiseTiles& t) {
  require(p.rank >= 1 && p.rank <= kMaxElementwiseRank, "elementwise: rank must be in [1, " +
                                                            std::to_string(kMaxElementwiseRank) +
                                                            "], got " + std::to_string(p.rank));
  require(t.threads >= 32 && t.threads <= kMaxThreadsPerBlock && t.threads % 32 == 0,
          "elementwise tiles: threads must be a multiple of 32 in [32, 1024], got " +
              std::to_string(t.threads));
  require(
      t.vector_width >= 1 && t.vector_width <= 8,
      "elementwise tiles: vector_width must be in [1, 8], got " + std::to_string(t.vector_width));
  validate_epilogue(p.steps);
}

// Thread mapping: thread g (global index) computes output elements g*VW .. g*VW+VW-1, then jumps
// by the whole grid (grid-stride loop). Contiguous problems index inputs by the output index;
// otherwise the output index is split into coordinates (last dimension fastest) and each input's
// offset is the dot product with its strides.
KernelSource elementwise_source(const ElementwiseProblem& p, const ElementwiseTiles& t) {
  validate_elementwise(p, t);
  const int inputs = 1 + epilogue_operand_count(p.steps);
  // Appended piece by piece (GCC 12 warns falsely on long "literal" + std::string chains).
  std::string name = "cuvil_elementwise_";
  name += to_string(p.input);
  name += "_";
  name += to_string(p.output);
  name += "_r";
  name += std::to_string(p.rank);
  name += "_t";
  name += std::to_string(t.threads);
  name += "_v";
  name += std::to_string(t.vector_width);
  if (p.all_contiguous) name += "_contiguous";
  for (const EpilogueStepSpec& step : p.steps) {
    name += "_";
    name += ir::to_string(step.op);
    if (is_binary_step(step.op)) name += to_string(step.operand_type);
  }
  std::string offsets;
  if (p.all_contiguous) {
    for (int k = 0; k < inputs; ++k) offsets += "const i64 off" + std::to_string(k) + " = i;\n";
  } else {
    for (int k = 0; k < inputs; ++k) offsets += "i64 off" + std::to_string(k) + " = 0;\n";
    offsets += "i64 rest = i;\n";
    for (int d = p.rank - 1; d >= 0; --d) {
      const std::string ds = std::to_string(d);
      offsets += "{ const i64 coord = rest % p.shape[" + ds + "]; rest /= p.shape[" + ds + "];\n";
      for (int k = 0; k < inputs; ++k) {
        const std::string ks = std::to_string(k);
        offsets += "  off" + ks + " += coord * p.strides[" + ks + "][" + ds + "];\n";
      }
      offsets += "}\n";
    }
  }
  std::string source(device_prelude());
  source += "struct Params { void* out; const void* inputs[" +
            std::to_string(kMaxElementwiseInputs) + "]; i64 total; i64 shape[" +
            std::to_string(kMaxElementwiseRank) + "]; i64 strides[" +
            std::to_string(kMaxElementwiseInputs) + "][" + std::to_string(kMaxElementwiseRank) +
            "]; };\n";
  source += "constexpr int VW = " + std::to_string(t.vector_width) + ";\n";
  source += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(t.threads) + ") " +
            name + "(const Params p) {\n";
  source +=
      "  const i64 stride = (i64)gridDim.x * blockDim.x * VW;\n"
      "  for (i64 first = ((i64)blockIdx.x * blockDim.x + threadIdx.x) * VW; first < p.total;\n"
      "       first += stride) {\n";
  if (vectorized(p, t)) {
    // A whole chunk: one vector load per input and one vector store (pointers are aligned to
    // 16 bytes and `first` is a multiple of VW, so every chunk is aligned).
    const std::vector<ElemType> types = input_types(p);
    std::string chunk_types, loads;
    for (size_t k = 0; k <= types.size(); ++k) {
      const ElemType type = k < types.size() ? types[k] : p.output;
      const std::string ks = k < types.size() ? std::to_string(k) : "Out";
      chunk_types += "struct __align__(" + std::to_string(t.vector_width * elem_bytes(type)) +
                     ") Chunk" + ks + " { " + std::string(storage_type(type)) + " v[VW]; };\n";
      if (k < types.size()) {
        loads += "      const Chunk" + ks + " c" + ks + " = *(const Chunk" + ks + "*)((const " +
                 std::string(storage_type(type)) + "*)p.inputs[" + ks + "] + first);\n";
      }
    }
    source.insert(source.find("extern \"C\""), chunk_types);
    source += "    if (first + VW <= p.total) {\n" + loads +
              "      ChunkOut out;\n"
              "#pragma unroll\n"
              "      for (int v = 0; v < VW; ++v) {\n" +
              chain_code(p, /*chunked=*/true) +
              "      }\n"
              "      *(ChunkOut*)((" +
              std::string(storage_type(p.output)) +
              "*)p.out + first) = out;\n"
              "      continue;\n"
              "    }\n";
  }
  source +=
      "#pragma unroll\n"
      "    for (int v = 0; v < VW; ++v) {\n"
      "      const i64 i = first + v;\n"
      "      if (i >= p.total) break;\n";
  source += offsets + chain_code(p);
  source += "    }\n  }\n}\n";
  return KernelSource{name, source, {"--std=c++17"}};
}

LaunchGeometry elementwise_geometry(int64_t total, const ElementwiseTiles& t) {
  LaunchGeometry g;
  g.block[0] = static_cast<unsigned>(t.threads);
  const int64_t per_block = static_cast<int64_t>(t.threads) * t.vector_width;
  // Enough blocks to fill an H200 many times over; the grid-stride loop covers the rest.
  g.grid[0] = static_cast<unsigned>(
      std::clamp<int64_t>((total + per_block - 1) / per_block, 1, int64_t{132} * 32));
  return g;
}

ElementwiseKernelParams elementwise_params(const std::vector<int64_t>& shape, void* out,
                                           const std::vector<const void*>& inputs,
                                           const std::vector<std::vector<int64_t>>& input_shapes) {
  require(!shape.empty() && shape.size() <= static_cast<size_t>(kMaxElementwiseRank),
          "elementwise: output rank must be in [1, " + std::to_string(kMaxElementwiseRank) + "]");
  require(
      inputs.size() == input_shapes.size() && !inputs.empty() &&
          inputs.size() <= static_cast<size_t>(kMaxElementwiseInputs),
      "elementwise: 1 to " + std::to_string(kMaxElementwiseInputs) + " inputs, each with a shape");
  ElementwiseKernelParams params;
  params.out = out;
  const int rank = static_cast<int>(shape.size());
  params.total = 1;
  for (int d = 0; d < rank; ++d) {
    params.shape[d] = shape[d];
    params.total *= shape[d];
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    params.inputs[k] = inputs[k];
    const std::vector<int64_t>& in = input_shapes[k];
    require(in.size() <= shape.size(),
            "elementwise: input " + std::to_string(k) + " has a higher rank than the output");
    // Right-aligned numpy broadcasting: a dimension of 1 (or a missing one) has stride 0.
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int id = d - (rank - static_cast<int>(in.size()));
      const int64_t extent = id >= 0 ? in[id] : 1;
      require(extent == shape[d] || extent == 1,
              "elementwise: input " + std::to_string(k) + " dimension " + std::to_string(id) +
                  " (" + std::to_string(extent) + ") does not broadcast to " +
                  std::to_string(shape[d]));
      params.strides[k][d] = extent == 1 ? 0 : stride;
      stride *= extent;
    }
  }
  return params;
}

}  // namespace cuvil::runtime::cuda::codegen
