#include "quern/input/decode_csv.hpp"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <type_traits>
#include <variant>

#include "quern/error.hpp"

namespace quern {

namespace {

[[noreturn]] void fail(const std::string& message) {
  throw invalid_argument_error(message);
}

[[noreturn]] void fail_at(const char* what, int64_t column, int64_t record) {
  fail(std::string(what) + " (field " + std::to_string(column) + " in record " +
       std::to_string(record) + ")");
}

/// A field of the current record: a slice of the record itself, or of the
/// scratch buffer when unescaping "" changed its text.
struct field_ref {
  size_t offset;
  size_t size;
  bool in_scratch;
};

/// TF's DecodeCSVOp::ExtractFields over string_views: no allocation per
/// field; only quoted fields with escaped quotes are copied (into scratch).
class splitter {
public:
  splitter(char delim, bool quotes, const std::vector<int64_t>& select)
      : delim_(delim), quotes_(quotes), select_(select) {
    // Characters that end the fast scan of an unquoted field.
    stop_[static_cast<unsigned char>(delim)] = true;
    stop_[static_cast<unsigned char>('\n')] = true;
    stop_[static_cast<unsigned char>('\r')] = true;
    if (quotes)
      stop_[static_cast<unsigned char>('"')] = true;
  }

  void split(std::string_view in, int64_t record) {
    count_ = 0;
    scratch_.clear();
    record_ = in;
    if (in.empty())
      return;
    if (is_plain(in)) {
      split_plain(in);
      return;
    }
    const bool all = select_.empty();
    const size_t n = in.size();
    size_t idx = 0;
    int64_t parsed = 0;
    size_t sel = 0;
    while (idx < n) {
      char c = in[idx];
      if (c == '\n' || c == '\r') {
        ++idx;
        continue;
      }
      bool include = all || select_[sel] == parsed;
      if (!(quotes_ && c == '"')) {
        size_t start = idx;
        while (idx < n && !stop_[static_cast<unsigned char>(in[idx])])
          ++idx;
        if (idx < n && in[idx] != delim_)
          fail_at("Unquoted fields cannot have quotes/CRLFs inside", parsed, record);
        if (include)
          add({start, idx - start, false});
        ++idx; // the delimiter, or past the end
      } else {
        ++idx;
        size_t start = idx;
        size_t scratch_start = scratch_.size();
        bool escaped = false;
        while (idx < n - 1 && (in[idx] != '"' || in[idx + 1] != delim_)) {
          if (in[idx] != '"') {
            if (escaped && include)
              scratch_ += in[idx];
            ++idx;
          } else {
            if (in[idx + 1] != '"')
              fail_at("Quote inside a string has to be escaped by another quote", parsed,
                      record);
            if (include) {
              if (!escaped)
                scratch_.append(in.data() + start, idx - start);
              escaped = true;
              scratch_ += '"';
            }
            idx += 2;
          }
        }
        if (!(idx < n && in[idx] == '"' && (idx == n - 1 || in[idx + 1] == delim_)))
          fail_at("Quoted field has to end with quote followed by delim or end", parsed,
                  record);
        if (include) {
          if (escaped)
            add({scratch_start, scratch_.size() - scratch_start, true});
          else
            add({start, idx - start, false});
        }
        idx += 2;
      }
      ++parsed;
      if (include) {
        ++sel;
        if (!all && sel == select_.size())
          return;
      }
    }
    bool include = all || select_[sel] == parsed;
    if (include && in[n - 1] == delim_)
      add({0, 0, false}); // a trailing delimiter: empty last field
  }

  size_t size() const { return count_; }

  std::string_view operator[](size_t i) const {
    auto& f = fields_[i];
    if (f.in_scratch)
      return std::string_view(scratch_).substr(f.offset, f.size);
    return record_.substr(f.offset, f.size);
  }

private:
  /// No character of the record but the delimiter needs the general scan:
  /// no CR or LF, and no quote when quotes are special.
  bool is_plain(std::string_view in) const {
    auto has = [&](char c) { return std::memchr(in.data(), c, in.size()) != nullptr; };
    return !has('\n') && !has('\r') && !(quotes_ && has('"'));
  }

  /// split() of a plain record: its fields are what lies between
  /// delimiters, found by memchr (the general scan looks at each character
  /// through a table, several times the work on such a record).
  void split_plain(std::string_view in) {
    const bool all = select_.empty();
    const char* begin = in.data();
    const char* p = begin;
    const char* end = begin + in.size();
    size_t sel = 0;
    for (int64_t parsed = 0;; ++parsed) {
      auto* d =
          static_cast<const char*>(std::memchr(p, delim_, static_cast<size_t>(end - p)));
      const char* stop = d != nullptr ? d : end;
      if (all || select_[sel] == parsed) {
        add({static_cast<size_t>(p - begin), static_cast<size_t>(stop - p), false});
        if (!all && ++sel == select_.size())
          return;
      }
      if (d == nullptr)
        return; // a trailing delimiter gave the empty last field above
      p = d + 1;
    }
  }

  char delim_;
  bool quotes_;
  const std::vector<int64_t>& select_;
  std::string_view record_;
  void add(field_ref f) {
    if (count_ == fields_.size())
      fields_.resize(fields_.size() * 2 + 8);
    fields_[count_++] = f;
  }

  bool stop_[256] = {};
  std::vector<field_ref> fields_; // the first count_ are this record's
  size_t count_ = 0;
  std::string scratch_;
};

/// isspace in the C locale: " \t\n\v\f\r".
bool is_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

/// TF's safe_strto*/safe_strtof allow white space around the number.
inline std::string_view trim(std::string_view s) {
  if (s.empty() || (!is_space(s.front()) && !is_space(s.back())))
    return s; // the usual case, decided in two comparisons
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

template <class Int>
bool parse_int(std::string_view text, Int& out) {
  auto s = trim(text);
  if (s.empty())
    return false;
  auto res = std::from_chars(s.data(), s.data() + s.size(), out);
  return res.ec == std::errc{} && res.ptr == s.data() + s.size();
}

/// Clinger's fast path: a plain decimal `[-]digits[.digits]` whose digits,
/// read as an integer m, and whose count of fractional digits k are both
/// exact in Float (m <= 2^24 and 10^k <= 10^10 for float; 2^53 and 10^22
/// for double) is m / 10^k in one IEEE division of exact operands, hence
/// correctly rounded: the very value from_chars returns, in about half of
/// its instructions (100 against 200 for "-0.123456" under callgrind).
/// False (and `out` untouched) for anything else.
template <class Float>
bool parse_plain_decimal(std::string_view s, Float& out) {
  constexpr bool is_float = std::is_same_v<Float, float>;
  constexpr uint64_t max_mantissa = is_float ? (uint64_t{1} << 24) : (uint64_t{1} << 53);
  constexpr size_t max_fraction = is_float ? 10 : 22;
  static constexpr double powers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char* p = s.data();
  const char* end = p + s.size();
  bool negative = p != end && *p == '-';
  p += negative ? 1 : 0;
  // At most 19 digits fit in m; the limit on m is checked once, at the end.
  uint64_t m = 0;
  const char* first = p;
  for (; p != end && static_cast<unsigned>(*p - '0') <= 9; ++p)
    m = m * 10 + static_cast<unsigned>(*p - '0');
  size_t whole = static_cast<size_t>(p - first);
  size_t fraction = 0;
  if (p != end && *p == '.') {
    const char* point = ++p;
    for (; p != end && static_cast<unsigned>(*p - '0') <= 9; ++p)
      m = m * 10 + static_cast<unsigned>(*p - '0');
    fraction = static_cast<size_t>(p - point);
  }
  // Anything else (an exponent, inf, nan, a '+', junk) is the slow path's.
  if (p != end || whole + fraction == 0 || whole + fraction > 19 || m > max_mantissa ||
      fraction > max_fraction)
    return false;
  Float v = static_cast<Float>(m) / static_cast<Float>(powers[fraction]);
  out = negative ? -v : v;
  return true;
}

template <class Float>
bool parse_float(std::string_view text, Float& out) {
  auto s = trim(text);
  if (s.empty())
    return false;
  if (parse_plain_decimal(s, out))
    return true;
  // Fast path: from_chars (correctly rounded, like strtod) for plain decimal,
  // inf and nan. Anything else it refuses (a '+' sign, hex, "infinity",
  // values out of range) goes to strtod, the reference.
  auto res = std::from_chars(s.data(), s.data() + s.size(), out);
  if (res.ec == std::errc{} && res.ptr == s.data() + s.size())
    return true;
  // strtod needs a terminated string; fields are views into the record.
  char small[128];
  std::string large;
  const char* begin;
  if (s.size() < sizeof(small)) {
    std::memcpy(small, s.data(), s.size());
    small[s.size()] = '\0';
    begin = small;
  } else {
    large.assign(s);
    begin = large.c_str();
  }
  char* end = nullptr;
  if constexpr (std::is_same_v<Float, float>)
    out = std::strtof(begin, &end);
  else
    out = std::strtod(begin, &end);
  // Out-of-range values become +-inf or a denormal, as in TF.
  return end == begin + s.size();
}

enum class field_status { ok, missing, invalid };

/// One output column of values of type T, with its default if it has one.
template <class T>
struct typed_column {
  std::optional<T> fallback;
  std::vector<T> values;

  /// Row `r` from field `text`; the default when it is empty or `na`. Error
  /// texts are made by the caller, so that this stays small and inlined.
  field_status fill(std::string_view text, std::string_view na, size_t r) {
    if (text.empty() || text == na) {
      if (!fallback)
        return field_status::missing;
      values[r] = *fallback;
      return field_status::ok;
    }
    return parse(text, r) ? field_status::ok : field_status::invalid;
  }

  /// Parses `text` into row `r`; false when it is not a valid T.
  bool parse(std::string_view text, size_t r) {
    if constexpr (std::is_same_v<T, std::string>) {
      values[r].assign(text.data(), text.size());
      return true;
    } else if constexpr (std::is_integral_v<T>) {
      return parse_int(text, values[r]);
    } else {
      return parse_float(text, values[r]);
    }
  }
};

/// The column types of TensorFlow's DecodeCSV (int32, int64, float, double,
/// string), one alternative each.
using column =
    std::variant<typed_column<int32_t>, typed_column<int64_t>, typed_column<float>,
                 typed_column<double>, typed_column<std::string>>;

dtype type_of(const column& c) {
  return std::visit(
      [](auto& col) {
        return dtype_of_v<typename std::decay_t<decltype(col.values)>::value_type>;
      },
      c);
}

template <class T>
constexpr bool is_csv_type = std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                             std::is_same_v<T, float> || std::is_same_v<T, double> ||
                             std::is_same_v<T, std::string>;

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
    return dtype_name(t);
  }
}

/// Column `i` of the output, from its record default (checks in TF's
/// order: the dtype, the rank, the number of defaults).
column make_column(const tensor& d, size_t i) {
  return visit_dtype(d.type(), [&](auto tag) -> column {
    using T = typename decltype(tag)::type;
    if constexpr (!is_csv_type<T>) {
      fail(std::string("csv: data type ") + dtype_name(d.type()) +
           " not supported in field " + std::to_string(i));
    } else {
      if (d.shape().rank() > 1)
        fail("Each record default should be at most rank 1");
      if (d.num_elements() >= 2)
        fail("There should only be 1 default per field but field " + std::to_string(i) +
             " has " + std::to_string(d.num_elements()));
      typed_column<T> col;
      if (d.num_elements() == 1)
        col.fallback = d.template values<T>()[0];
      return col;
    }
  });
}

} // namespace

namespace {

/// The attribute checks, in TF's order (DecodeCSVOp's constructor).
void check_attributes(const std::vector<tensor>& record_defaults,
                      const std::string& field_delim,
                      const std::vector<int64_t>& select_cols) {
  if (!select_cols.empty() && select_cols.size() != record_defaults.size())
    fail("select_cols should match output size (" + std::to_string(select_cols.size()) +
         " select_cols, " + std::to_string(record_defaults.size()) + " record_defaults)");
  for (size_t i = 1; i < select_cols.size(); ++i)
    if (select_cols[i - 1] >= select_cols[i])
      fail("select_cols should be strictly increasing indices");
  if (!select_cols.empty() && select_cols.front() < 0)
    fail("select_cols should be non-negative indices");
  if (field_delim.size() != 1)
    fail("field_delim should be only 1 char");
}

/// decode_csv of `n` records, record r being `record_at(r)`, after
/// check_attributes; the outputs take `shape`.
template <class RecordAt>
std::vector<tensor> decode_rows(size_t n, RecordAt record_at, const tensor_shape& shape,
                                const std::vector<tensor>& record_defaults,
                                const std::string& field_delim, bool use_quote_delim,
                                const std::string& na_value,
                                const std::vector<int64_t>& select_cols) {
  const size_t ncols = record_defaults.size();
  std::vector<column> cols;
  cols.reserve(ncols);
  for (size_t i = 0; i < ncols; ++i)
    cols.push_back(make_column(record_defaults[i], i));
  for (auto& c : cols)
    std::visit([n](auto& col) { col.values.resize(n); }, c);

  const std::string_view na{na_value};
  splitter fields{field_delim[0], use_quote_delim, select_cols};
  for (size_t r = 0; r < n; ++r) {
    auto ri = static_cast<int64_t>(r);
    fields.split(record_at(r), ri);
    if (fields.size() != ncols)
      fail("Expect " + std::to_string(ncols) + " fields but have " +
           std::to_string(fields.size()) + " in record " + std::to_string(r));
    for (size_t f = 0; f < ncols; ++f) {
      auto text = fields[f];
      auto status = std::visit([&](auto& col) { return col.fill(text, na, r); }, cols[f]);
      if (status == field_status::missing)
        fail("Field " + std::to_string(f) + " is required but missing in record " +
             std::to_string(r) + "!");
      if (status == field_status::invalid)
        fail("Field " + std::to_string(f) + " in record " + std::to_string(r) +
             " is not a valid " + type_word(type_of(cols[f])) + ": " + std::string(text));
    }
  }

  std::vector<tensor> out;
  out.reserve(ncols);
  for (auto& c : cols)
    std::visit(
        [&](auto& col) {
          out.push_back(tensor::from_values(shape, std::move(col.values)));
        },
        c);
  return out;
}

} // namespace

std::vector<tensor> decode_csv(const tensor& records,
                               const std::vector<tensor>& record_defaults,
                               const std::string& field_delim, bool use_quote_delim,
                               const std::string& na_value,
                               const std::vector<int64_t>& select_cols) {
  check_attributes(record_defaults, field_delim, select_cols);
  if (records.type() != dtype::string)
    fail(std::string("decode_csv: records must be a string tensor, not ") +
         dtype_name(records.type()));
  auto recs = records.values<std::string>();
  return decode_rows(
      recs.size(), [&recs](size_t r) { return std::string_view{recs[r]}; },
      records.shape(), record_defaults, field_delim, use_quote_delim, na_value,
      select_cols);
}

std::vector<tensor> decode_csv(const packed_values& records,
                               const std::vector<tensor>& record_defaults,
                               const std::string& field_delim, bool use_quote_delim,
                               const std::string& na_value,
                               const std::vector<int64_t>& select_cols) {
  check_attributes(record_defaults, field_delim, select_cols);
  records.check_ends("decode_csv"); // packed by hand, they could point outside
  return decode_rows(
      records.size(), [&records](size_t r) { return records[r]; },
      tensor_shape{static_cast<int64_t>(records.size())}, record_defaults, field_delim,
      use_quote_delim, na_value, select_cols);
}

std::vector<tensor> decode_csv(const std::string& record,
                               const std::vector<tensor>& record_defaults,
                               const std::string& field_delim, bool use_quote_delim,
                               const std::string& na_value,
                               const std::vector<int64_t>& select_cols) {
  return decode_csv(tensor::scalar(record), record_defaults, field_delim, use_quote_delim,
                    na_value, select_cols);
}

} // namespace quern
