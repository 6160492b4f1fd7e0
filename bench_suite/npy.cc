#include "bench_suite/npy.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace cuvil::bench {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr int64_t kMaxExactInteger = int64_t{1} << 24;

// The value of `key` in the header dict: the text after "'key':" up to the next top-level comma
// or closing brace.
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  const std::string quoted[] = {"'" + key + "'", "\"" + key + "\""};
  size_t at = std::string::npos;
  for (const std::string& q : quoted) {
    at = header.find(q);
    if (at != std::string::npos) {
      at += q.size();
      break;
    }
  }
  if (at == std::string::npos) throw UserError(path + ": .npy header has no '" + key + "'");
  at = header.find(':', at);
  if (at == std::string::npos)
    throw UserError(path + ": .npy header is malformed near '" + key + "'");
  ++at;
  int depth = 0;
  size_t end = at;
  for (; end < header.size(); ++end) {
    const char ch = header[end];
    if (ch == '(' || ch == '[') ++depth;
    if (ch == ')' || ch == ']') --depth;
    if (depth == 0 && (ch == ',' || ch == '}')) break;
    if (depth < 0) break;
  }
  std::string v = header.substr(at, end - at);
  const size_t b = v.find_first_not_of(" \t"), e = v.find_last_not_of(" \t");
  return b == std::string::npos ? "" : v.substr(b, e - b + 1);
}

ir::Shape parse_shape(const std::string& text, const std::string& path) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    throw UserError(path + ": .npy shape '" + text + "' is not a tuple");
  ir::Shape shape;
  std::stringstream ss(text.substr(1, text.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \tL");
    if (b == std::string::npos) continue;
    const std::string digits = item.substr(b, e - b + 1);
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(digits, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != digits.size() || v < 0)
      throw UserError(path + ": .npy shape '" + text + "' has a bad dimension");
    shape.push_back(v);
  }
  return shape;
}

// Element k of the raw bytes as a double.
double element(const char* p, char kind, int width, bool swap) {
  unsigned char buf[8];
  std::memcpy(buf, p, static_cast<size_t>(width));
  if (swap) {
    for (int i = 0; i < width / 2; ++i) std::swap(buf[i], buf[width - 1 - i]);
  }
  auto as = [&](auto v) {
    std::memcpy(&v, buf, sizeof v);
    return static_cast<double>(v);
  };
  switch (kind) {
    case 'f':
      if (width == 4) return as(float{});
      if (width == 8) return as(double{});
      {  // float16
        uint16_t h;
        std::memcpy(&h, buf, 2);
        const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
        double v = e == 0    ? std::ldexp(m, -24)
                   : e == 31 ? (m ? NAN : INFINITY)
                             : std::ldexp(m | 0x400, e - 25);
        return (h & 0x8000) ? -v : v;
      }
    case 'i':
      if (width == 1) return as(int8_t{});
      if (width == 2) return as(int16_t{});
      if (width == 4) return as(int32_t{});
      return as(int64_t{});
    case 'u':
      if (width == 1) return as(uint8_t{});
      if (width == 2) return as(uint16_t{});
      if (width == 4) return as(uint32_t{});
      return as(uint64_t{});
    default:  // 'b'
      return buf[0] != 0;
  }
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open .npy file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0) {
    throw UserError(path +
                    ": not a .npy file (numpy.save writes one; the magic string is missing)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw UserError(path + ": truncated .npy header");
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    throw UserError(path + ": .npy format version " + std::to_string(major) + " is not supported");
  }
  if (offset + header_len > bytes.size()) throw UserError(path + ": truncated .npy header");
  const std::string header = bytes.substr(offset, header_len);
  NpyArray a;
  std::string descr = dict_value(header, "descr", path);
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"'))
    throw UserError(path + ": .npy descr " + descr +
                    " is not a simple dtype (structured arrays are not supported)");
  descr = descr.substr(1, descr.size() - 2);
  a.dtype = descr;
  const std::string fortran = dict_value(header, "fortran_order", path);
  if (fortran != "True" && fortran != "False")
    throw UserError(path + ": .npy fortran_order is '" + fortran + "'");
  a.shape = parse_shape(dict_value(header, "shape", path), path);

  if (descr.size() < 3) throw UserError(path + ": unsupported .npy dtype '" + descr + "'");
  const char order = descr[0], kind = descr[1];
  int width = 0;
  try {
    width = std::stoi(descr.substr(2));
  } catch (const std::exception&) {
  }
  const bool known =
      (kind == 'f' && (width == 2 || width == 4 || width == 8)) ||
      ((kind == 'i' || kind == 'u') && (width == 1 || width == 2 || width == 4 || width == 8)) ||
      (kind == 'b' && width == 1);
  if (!known || (order != '<' && order != '>' && order != '|' && order != '=')) {
    throw UserError(path + ": unsupported .npy dtype '" + descr +
                    "' (float16/32/64, integers and bool are read)");
  }
  a.is_integer = kind != 'f';
  const bool swap = order == '>';
  int64_t count = 1;
  for (int64_t d : a.shape) {
    if (d > 0 && count > (int64_t{1} << 40) / d) throw UserError(path + ": .npy array too large");
    count *= d;
  }
  const size_t data_at = offset + header_len;
  const size_t need = static_cast<size_t>(count) * static_cast<size_t>(width);
  if (bytes.size() - data_at != need) {
    throw UserError(path + ": .npy data holds " + std::to_string(bytes.size() - data_at) +
                    " bytes, shape " + ir::to_string(a.shape) + " of " + descr + " needs " +
                    std::to_string(need));
  }
  std::vector<float> raw(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    const double v =
        element(bytes.data() + data_at + static_cast<size_t>(k) * width, kind, width, swap);
    if (a.is_integer && std::fabs(v) > static_cast<double>(kMaxExactInteger)) {
      throw UserError(path + ": integer " + std::to_string(static_cast<int64_t>(v)) +
                      " at element " + std::to_string(k) +
                      " exceeds 2^24, which fp32 storage keeps exact");
    }
    raw[static_cast<size_t>(k)] = static_cast<float>(v);
  }
  if (fortran == "True" && a.shape.size() > 1) {
    // Column-major: element (i0, ..., in) sits at sum i_d * prod(shape[:d]).
    a.data.resize(raw.size());
    const size_t r = a.shape.size();
    std::vector<int64_t> index(r, 0);
    for (int64_t k = 0; k < count; ++k) {
      int64_t src = 0, stride = 1;
      for (size_t d = 0; d < r; ++d) {
        src += index[d] * stride;
        stride *= a.shape[d];
      }
      a.data[static_cast<size_t>(k)] = raw[static_cast<size_t>(src)];
      for (size_t d = r; d-- > 0;) {
        if (++index[d] < a.shape[d]) break;
        index[d] = 0;
      }
    }
  } else {
    a.data = std::move(raw);
  }
  return a;
}

void write_npy(const std::string& path, const ir::Shape& shape, const std::vector<float>& data) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // (3,) keeps its comma, (2, 3) does not
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Padded with spaces and a newline so the data starts on a 64-byte boundary.
  const bool v2 = header.size() + 11 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  const size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UserError(path + ": cannot write: " + std::strerror(errno));
  out.write(kMagic, 6);
  const char version[2] = {static_cast<char>(v2 ? 2 : 1), 0};
  out.write(version, 2);
  const uint32_t len = static_cast<uint32_t>(header.size());
  const char len_bytes[4] = {static_cast<char>(len & 0xff), static_cast<char>((len >> 8) & 0xff),
                             static_cast<char>((len >> 16) & 0xff),
                             static_cast<char>((len >> 24) & 0xff)};
  out.write(len_bytes, v2 ? 4 : 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size() * sizeof(float)));
  if (!out.flush()) throw UserError(path + ": cannot write: " + std::strerror(errno));
}

}  // namespace cuvil::bench
