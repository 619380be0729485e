#include "quern/state_bytes.hpp"

#include <cstring>
#include <vector>

#include "quern/error.hpp"

// Tensor values are kept in the host's layout (tensor.hpp) and written as
// they are: the format is little-endian, so the host must be.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "state_bytes writes tensor values in the host's byte order, which the "
              "format says is little-endian");

namespace quern {

namespace {

template <class T>
void put_le(std::string& out, T v) {
  char b[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i)
    b[i] = static_cast<char>(static_cast<uint64_t>(v) >> (8 * i));
  out.append(b, sizeof(T));
}

template <class T>
T get_le(const char* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return static_cast<T>(v);
}

// The fewest bytes a tensor takes (dtype, rank): bounds a count of them.
constexpr size_t min_tensor_bytes = 1 + 4;

} // namespace

// -- state_writer --------------------------------------------------------------

state_writer& state_writer::write_u8(uint8_t v) {
  out_.push_back(static_cast<char>(v));
  return *this;
}

state_writer& state_writer::write_u32(uint32_t v) {
  put_le(out_, v);
  return *this;
}

state_writer& state_writer::write_u64(uint64_t v) {
  put_le(out_, v);
  return *this;
}

state_writer& state_writer::write_i64(int64_t v) {
  put_le(out_, static_cast<uint64_t>(v));
  return *this;
}

state_writer& state_writer::write_f64(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return write_u64(bits);
}

state_writer& state_writer::write_string(std::string_view s) {
  write_u64(s.size());
  out_.append(s.data(), s.size());
  return *this;
}

state_writer& state_writer::write_tensor(const tensor& t) {
  write_u8(static_cast<uint8_t>(t.type()));
  const auto& dims = t.shape().dims();
  write_u32(static_cast<uint32_t>(dims.size()));
  for (auto d : dims)
    write_i64(d);
  if (t.type() == dtype::string) {
    for (const auto& s : t.values<std::string>())
      write_string(s);
    return *this;
  }
  auto n = static_cast<size_t>(t.num_elements()) * dtype_size(t.type());
  write_u64(n);
  if (n > 0)
    out_.append(reinterpret_cast<const char*>(t.bytes()), n);
  return *this;
}

state_writer& state_writer::write_element(const element& e) {
  write_u32(static_cast<uint32_t>(e.size()));
  for (const auto& c : e.components)
    write_tensor(c);
  return *this;
}

// -- state_reader --------------------------------------------------------------

state_reader::state_reader(std::string_view bytes, std::string what)
    : bytes_(bytes), what_(std::move(what)) {}

void state_reader::fail(const std::string& problem, size_t at) const {
  throw data_loss_error(what_ + ": " + problem + " at byte " + std::to_string(at));
}

const char* state_reader::take(size_t n, const char* field) {
  if (n > remaining())
    fail(std::string("cut short: ") + field + " needs " + std::to_string(n) + " bytes, " +
         std::to_string(remaining()) + " left");
  auto p = bytes_.data() + pos_;
  pos_ += n;
  return p;
}

uint8_t state_reader::read_u8() {
  return static_cast<uint8_t>(*take(1, "a u8"));
}

uint32_t state_reader::read_u32() {
  return get_le<uint32_t>(take(4, "a u32"));
}

uint64_t state_reader::read_u64() {
  return get_le<uint64_t>(take(8, "a u64"));
}

int64_t state_reader::read_i64() {
  return static_cast<int64_t>(get_le<uint64_t>(take(8, "an i64")));
}

double state_reader::read_f64() {
  auto bits = get_le<uint64_t>(take(8, "a double"));
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

std::string state_reader::read_string() {
  auto at = pos_;
  auto n = read_u64();
  if (n > remaining())
    fail("a string of " + std::to_string(n) + " bytes claimed, " +
             std::to_string(remaining()) + " left",
         at);
  auto p = take(static_cast<size_t>(n), "a string");
  return std::string(p, static_cast<size_t>(n));
}

tensor state_reader::read_tensor() {
  auto at = pos_;
  auto raw = read_u8();
  if (!is_valid_dtype(raw))
    fail("unknown dtype number " + std::to_string(raw), at);
  auto type = static_cast<dtype>(raw);
  auto rank_at = pos_;
  auto rank = read_u32();
  if (rank > remaining() / 8) // each dimension takes 8 bytes
    fail("a rank of " + std::to_string(rank) + " claimed, " +
             std::to_string(remaining()) + " bytes left",
         rank_at);
  std::vector<int64_t> dims(rank);
  int64_t count = 1;
  for (auto& d : dims) {
    auto dim_at = pos_;
    d = read_i64();
    if (d < 0)
      fail("negative dimension " + std::to_string(d), dim_at);
    if (__builtin_mul_overflow(count, d, &count))
      fail("a shape with more elements than int64 counts", dim_at);
  }
  tensor_shape shape(std::move(dims));
  auto values_at = pos_;
  if (type == dtype::string) {
    // Each string takes 8 bytes at least: bounds the count before anything
    // is allocated for it.
    if (static_cast<uint64_t>(count) > remaining() / 8)
      fail("a string tensor of " + std::to_string(count) + " values claimed, " +
               std::to_string(remaining()) + " bytes left",
           values_at);
    std::vector<std::string> values;
    values.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      values.push_back(read_string());
    return tensor::from_values(std::move(shape), std::move(values));
  }
  auto size = dtype_size(type);
  auto n = read_u64();
  // Divided, not multiplied: count * size may wrap around.
  if (n % size != 0 || n / size != static_cast<uint64_t>(count))
    fail(std::to_string(n) + " bytes for " + std::to_string(count) + " values of dtype " +
             dtype_name(type),
         values_at);
  auto p = take(static_cast<size_t>(n), "tensor values");
  if (type == dtype::boolean)
    for (uint64_t i = 0; i < n; ++i)
      if (static_cast<unsigned char>(p[i]) > 1)
        fail("bool value " + std::to_string(static_cast<unsigned char>(p[i])),
             static_cast<size_t>(p - bytes_.data() + static_cast<std::ptrdiff_t>(i)));
  detail::tensor_wire w;
  w.type = raw;
  w.shape = std::move(shape);
  auto first = reinterpret_cast<const unsigned char*>(p);
  w.bytes.assign(first, first + n);
  return tensor::from_wire(std::move(w));
}

element state_reader::read_element() {
  auto at = pos_;
  auto n = read_u32();
  if (n > remaining() / min_tensor_bytes)
    fail("an element of " + std::to_string(n) + " components claimed, " +
             std::to_string(remaining()) + " bytes left",
         at);
  element e;
  e.components.reserve(n);
  for (uint32_t i = 0; i < n; ++i)
    e.components.push_back(read_tensor());
  return e;
}

void state_reader::expect_end() const {
  if (remaining() > 0)
    fail(std::to_string(remaining()) + " trailing bytes");
}

} // namespace quern
