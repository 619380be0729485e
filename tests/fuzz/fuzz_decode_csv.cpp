// Fuzz target: decode_csv (quern/input/decode_csv.hpp), records and
// record_defaults.
//
// The first byte picks the input's form (its value modulo 3):
//   0  anything: defaults of any dtype, rank and size, any delimiter string,
//      quoting on or off, an na_value, select_cols, 1 to 4 records of any
//      bytes (0xFF separates them);
//   1  fields of any bytes, each quoted (`"` doubled inside) and joined with
//      a delimiter, decoded as string columns, some of them selected;
//   2  fields without quotes or line breaks, decoded into columns of every
//      supported dtype and checked against a reference parser.
//
// Promises checked (a broken one traps, so libFuzzer reports it):
// - decode_csv returns one tensor per record default, of the default's dtype
//   and the records' shape, or throws quern::invalid_argument_error (an
//   op_error with code invalid_argument and a message); nothing else.
// - Records packed end to end (packed_values) decode as the same records in
//   a string tensor.
// - Decoding records together is decoding each alone: the batch fails
//   exactly when one record fails, and otherwise column j of the batch is
//   the stack of column j of each record.
// - Quoted fields come back byte for byte, whatever they contain (the
//   delimiter, quotes, line breaks).
// - Unquoted fields follow the reference: the record split at each
//   delimiter; empty or na_value fields take the default or are `required
//   but missing`; int32/int64 are -?[0-9]+ in range (after white space is
//   trimmed); float/double are what strtof/strtod take whole; the error is
//   TF's text for the first field that fails.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "quern/error.hpp"
#include "quern/input/decode_csv.hpp"
#include "quern/tensor.hpp"

#define QUERN_FUZZ_TARGET "fuzz_decode_csv"
#include "fuzz_support.hpp"

namespace {

using quern::dtype;
using quern::tensor;
using quern::tensor_shape;

using quern::fuzz::input;

/// The rest of the input, cut at 0xFF bytes.
std::vector<std::string> rest_split(input& in) {
  std::vector<std::string> parts(1);
  while (!in.done()) {
    auto c = in.u8();
    if (c == 0xFF)
      parts.emplace_back();
    else
      parts.back() += static_cast<char>(c);
  }
  return parts;
}

/// The outcome of one call: the outputs, or the message of the
/// invalid_argument_error it threw. Anything else breaks a promise.
struct outcome {
  std::optional<std::vector<tensor>> outputs;
  std::string error;
};

outcome call(const tensor& records, const std::vector<tensor>& defaults,
             const std::string& delim, bool quotes, const std::string& na,
             const std::vector<int64_t>& select) {
  outcome r;
  try {
    r.outputs = quern::decode_csv(records, defaults, delim, quotes, na, select);
  } catch (const quern::invalid_argument_error& e) {
    r.error = e.what();
    PROMISE(e.code() == quern::error_code::invalid_argument);
    PROMISE(!r.error.empty());
    return r;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    quern::fuzz::broken("decode_csv threw something other than invalid_argument_error",
                        __LINE__);
  } catch (...) {
    quern::fuzz::broken("decode_csv threw a non-exception", __LINE__);
  }
  PROMISE(r.outputs->size() == defaults.size());
  for (size_t i = 0; i < defaults.size(); ++i) {
    PROMISE((*r.outputs)[i].type() == defaults[i].type());
    PROMISE((*r.outputs)[i].shape() == records.shape());
  }
  return r;
}

outcome call_one(const std::string& record, const std::vector<tensor>& defaults,
                 const std::string& delim, bool quotes, const std::string& na,
                 const std::vector<int64_t>& select) {
  return call(tensor::scalar(record), defaults, delim, quotes, na, select);
}

/// A record default of dtype t with one element, or none (required).
tensor make_default(dtype t, bool has, input& in) {
  auto b = in.u8();
  switch (t) {
  case dtype::int32:
    return has ? tensor::vector<int32_t>({int32_t(b) - 7}) : tensor::vector<int32_t>({});
  case dtype::int64:
    return has ? tensor::scalar(int64_t(b) * -3) : tensor::vector<int64_t>({});
  case dtype::float32:
    return has ? tensor::scalar(float(b) / 4) : tensor::vector<float>({});
  case dtype::float64:
    return has ? tensor::vector<double>({double(b) / 8}) : tensor::vector<double>({});
  default:
    return has ? tensor::scalar(std::string(1, char('a' + b % 26)))
               : tensor::vector<std::string>({});
  }
}

const dtype supported[] = {dtype::int32, dtype::int64, dtype::float32, dtype::float64,
                           dtype::string};

// -- form 0: anything -----------------------------------------------------------

void check_anything(input& in) {
  std::vector<tensor> defaults;
  size_t ncols = in.u8() % 6u;
  for (size_t i = 0; i < ncols; ++i) {
    auto k = in.u8();
    switch (k % 16) {
    case 13: // unsupported dtype
      defaults.push_back(k & 16 ? tensor::scalar(true) : tensor::scalar(uint8_t{1}));
      break;
    case 14: // two defaults
      defaults.push_back(tensor::vector<int64_t>({1, 2}));
      break;
    case 15: // rank 2
      defaults.push_back(tensor::from_values<std::string>({1, 1}, {"x"}));
      break;
    default:
      defaults.push_back(make_default(supported[k % 5], (k & 16) == 0, in));
    }
  }
  auto d = in.u8();
  std::string delim = d % 8 == 0 ? std::string{} : d % 8 == 1 ? std::string(",;") : "";
  if (delim.empty() && d % 8 != 0)
    delim = std::string(1, static_cast<char>(in.u8()));
  bool quotes = d & 8;
  auto na = in.str(3);
  std::vector<int64_t> select;
  auto s = in.u8();
  if (s % 4 == 1) {
    // strictly increasing, one per default
    int64_t at = -1;
    for (size_t i = 0; i < ncols; ++i)
      select.push_back(at += 1 + in.u8() % 3);
  } else if (s % 4 == 2) {
    size_t n = in.u8() % 4u;
    for (size_t i = 0; i < n; ++i)
      select.push_back(static_cast<int8_t>(in.u8()));
  }
  auto records = rest_split(in);
  if (records.size() > 4)
    records.resize(4);

  auto batch =
      call(tensor::vector<std::string>(records), defaults, delim, quotes, na, select);
  // The same records packed end to end (reader::read_values_up_to's form)
  // decode to the same outputs, or fail with the same text.
  quern::packed_values packed;
  for (auto& r : records) {
    packed.text += r;
    packed.ends.push_back(packed.text.size());
  }
  outcome from_packed;
  try {
    from_packed.outputs = quern::decode_csv(packed, defaults, delim, quotes, na, select);
  } catch (const quern::invalid_argument_error& e) {
    from_packed.error = e.what();
  }
  PROMISE(from_packed.outputs.has_value() == batch.outputs.has_value());
  PROMISE(from_packed.error == batch.error);
  if (batch.outputs)
    PROMISE(*from_packed.outputs == *batch.outputs);
  std::vector<outcome> singles;
  bool any_failed = false;
  for (auto& r : records) {
    singles.push_back(call_one(r, defaults, delim, quotes, na, select));
    any_failed = any_failed || !singles.back().outputs;
  }
  PROMISE(batch.outputs.has_value() == !any_failed);
  if (!batch.outputs)
    return;
  for (size_t j = 0; j < defaults.size(); ++j) {
    std::vector<tensor> rows;
    for (auto& one : singles)
      rows.push_back((*one.outputs)[j]);
    PROMISE(tensor::stack(rows) == (*batch.outputs)[j]);
  }
}

// -- form 1: quoted fields --------------------------------------------------------

void check_quoted(input& in) {
  char delim = static_cast<char>(in.u8());
  if (delim == '"')
    delim = ',';
  auto pick = in.u8();
  auto fields = rest_split(in);
  if (fields.size() > 8)
    fields.resize(8);
  std::string record;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0)
      record += delim;
    record += '"';
    for (char c : fields[i]) {
      if (c == '"')
        record += '"';
      record += c;
    }
    record += '"';
  }
  // select_cols: the fields whose bit is set in `pick` (all when none is).
  std::vector<int64_t> select;
  std::vector<std::string> expect;
  for (size_t i = 0; i < fields.size(); ++i)
    if (pick & (1u << i))
      select.push_back(static_cast<int64_t>(i));
  if (select.empty()) {
    expect = fields;
  } else {
    for (auto i : select)
      expect.push_back(fields[static_cast<size_t>(i)]);
  }
  std::vector<tensor> defaults(expect.size(), tensor::vector<std::string>({""}));
  auto r = call_one(record, defaults, std::string(1, delim), true, "", select);
  if (!r.outputs)
    std::fprintf(stderr, "decode_csv refused quoted record: %s\n", r.error.c_str());
  PROMISE(r.outputs.has_value());
  for (size_t i = 0; i < expect.size(); ++i)
    PROMISE((*r.outputs)[i].scalar_value<std::string>() == expect[i]);
}

// -- form 2: unquoted fields against a reference ----------------------------------

bool is_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b]))
    ++b;
  while (e > b && is_space(s[e - 1]))
    --e;
  return s.substr(b, e - b);
}

template <class Int>
std::optional<Int> ref_int(const std::string& text) {
  auto s = trimmed(text);
  size_t i = 0;
  bool neg = !s.empty() && s[0] == '-';
  if (neg)
    i = 1;
  if (i == s.size())
    return std::nullopt;
  // Accumulate as a negative number: its range includes the minimum.
  Int v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9')
      return std::nullopt;
    Int digit = static_cast<Int>(s[i] - '0');
    if (v < (std::numeric_limits<Int>::min() + digit) / 10)
      return std::nullopt;
    v = static_cast<Int>(v * 10 - digit);
  }
  if (!neg) {
    if (v == std::numeric_limits<Int>::min())
      return std::nullopt;
    v = static_cast<Int>(-v);
  }
  return v;
}

template <class Float>
std::optional<Float> ref_float(const std::string& text) {
  auto s = trimmed(text);
  if (s.empty())
    return std::nullopt;
  char* end = nullptr;
  Float v;
  if constexpr (std::is_same_v<Float, float>)
    v = std::strtof(s.c_str(), &end);
  else
    v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size())
    return std::nullopt;
  return v;
}

template <class T>
bool same_value(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) && std::isnan(b))
      return true; // NaN payloads may differ between from_chars and strtod
    return std::memcmp(&a, &b, sizeof(T)) == 0;
  } else {
    return a == b;
  }
}

const char* type_word(dtype t) {
  switch (t) {
  case dtype::int32:
    return "int32";
  case dtype::int64:
    return "int64";
  case dtype::float32:
    return "float";
  case dtype::float64:
    return "double";
  default:
    return "string";
  }
}

/// The reference's value of one field, or the error text.
template <class T>
bool check_field(const tensor& out, const tensor& def, const std::string& field,
                 const std::string& na, size_t f, std::string& error) {
  if (field.empty() || field == na) {
    if (def.num_elements() == 0) {
      error = "Field " + std::to_string(f) + " is required but missing in record 0!";
      return false;
    }
    if (out.type() == def.type())
      PROMISE(same_value(out.scalar_value<T>(), def.values<T>()[0]));
    return true;
  }
  std::optional<T> v;
  if constexpr (std::is_same_v<T, std::string>)
    v = field;
  else if constexpr (std::is_floating_point_v<T>)
    v = ref_float<T>(field);
  else
    v = ref_int<T>(field);
  if (!v) {
    error = "Field " + std::to_string(f) + " in record 0 is not a valid " +
            type_word(def.type()) + ": " + field;
    return false;
  }
  if (out.type() == def.type())
    PROMISE(same_value(out.scalar_value<T>(), *v));
  return true;
}

void check_reference(input& in) {
  char delim = static_cast<char>(in.u8());
  if (delim == '"' || delim == '\n' || delim == '\r')
    delim = ',';
  auto flags = in.u8();
  bool quotes = flags & 1;
  std::string na = flags & 2 ? std::string("NA") : std::string();
  std::vector<tensor> defaults;
  size_t ncols = in.u8() % 6u;
  for (size_t i = 0; i < ncols; ++i) {
    auto k = in.u8();
    defaults.push_back(make_default(supported[k % 5], (k & 8) == 0, in));
  }
  std::string record;
  while (!in.done()) {
    auto c = static_cast<char>(in.u8());
    if (c == '"' || c == '\n' || c == '\r')
      c = ' ';
    record += c;
  }
  // The reference split: none for an empty record, else at every delimiter.
  std::vector<std::string> fields;
  if (!record.empty()) {
    fields.emplace_back();
    for (char c : record) {
      if (c == delim)
        fields.emplace_back();
      else
        fields.back() += c;
    }
  }
  auto r = call_one(record, defaults, std::string(1, delim), quotes, na, {});
  std::string error;
  if (fields.size() != defaults.size()) {
    error = "Expect " + std::to_string(defaults.size()) + " fields but have " +
            std::to_string(fields.size()) + " in record 0";
  } else {
    for (size_t f = 0; f < fields.size() && error.empty(); ++f) {
      // Without outputs, compare against a tensor of another dtype: only the
      // verdict (and the error text) is checked then.
      tensor none = tensor::scalar(true);
      const tensor& out = r.outputs ? (*r.outputs)[f] : none;
      switch (defaults[f].type()) {
      case dtype::int32:
        check_field<int32_t>(out, defaults[f], fields[f], na, f, error);
        break;
      case dtype::int64:
        check_field<int64_t>(out, defaults[f], fields[f], na, f, error);
        break;
      case dtype::float32:
        check_field<float>(out, defaults[f], fields[f], na, f, error);
        break;
      case dtype::float64:
        check_field<double>(out, defaults[f], fields[f], na, f, error);
        break;
      default:
        check_field<std::string>(out, defaults[f], fields[f], na, f, error);
      }
    }
  }
  // what() is a C string: the message as far as its first NUL byte.
  error = error.substr(0, error.find('\0'));
  if (error.empty() != r.outputs.has_value() || error != r.error)
    std::fprintf(stderr, "record '%s': reference says '%s', decode_csv '%s'\n",
                 record.c_str(), error.c_str(), r.error.c_str());
  PROMISE(error.empty() == r.outputs.has_value());
  PROMISE(error == r.error);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  input in{data + 1, size - 1};
  switch (data[0] % 3) {
  case 0:
    check_anything(in);
    break;
  case 1:
    check_quoted(in);
    break;
  default:
    check_reference(in);
  }
  return 0;
}
