#pragma once

// tf.decode_csv (docs/semantics.md CSV-1..CSV-3): parses CSV records into one
// tensor per column. Pure computation, no I/O: safe anywhere, including
// event-based actors.

#include <cstdint>
#include <string>
#include <vector>

#include "quern/input/packed_values.hpp"
#include "quern/tensor.hpp"

namespace quern {

/// Decodes `records` (a string tensor of any shape) into one tensor per
/// column: output i has the dtype of record_defaults[i] (int32, int64,
/// float32, float64 or string) and the shape of `records`; element j of every
/// output comes from the flat record j.
///
/// - record_defaults[i] has rank <= 1 and 0 or 1 elements: 1 element is the
///   value of an empty field (or one equal to `na_value`); 0 elements makes
///   the column required.
/// - Fields are split on `field_delim` (exactly one character); a trailing
///   delimiter adds an empty last field; "\n" and "\r" between fields are
///   skipped; an empty record has 0 fields. With use_quote_delim a field
///   that starts with '"' is quoted: "" inside is a quote, the closing quote
///   must be followed by the delimiter or the end of the record.
/// - Numbers are parsed strictly: the whole field (apart from leading and
///   trailing white space, which TF also allows) must be the number; ints
///   have no '+' sign and must fit the type; floats accept what strtod
///   accepts (decimal, exponent, hex, inf, nan).
/// - select_cols (strictly increasing, non-negative column indices) keeps
///   only those columns; record_defaults then has one entry per selected
///   column, and a record needs only as many columns as the last selected.
///
/// Every error is thrown as invalid_argument_error, with TF's texts (<r> is
/// the flat record index, <f> the output index):
///   `field_delim should be only 1 char`
///   `There should only be 1 default per field but field <f> has <n>`
///   `Each record default should be at most rank 1`
///   `csv: data type <dtype> not supported in field <f>`
///   `Expect <n> fields but have <m> in record <r>`
///   `Field <f> is required but missing in record <r>!`
///   `Field <f> in record <r> is not a valid int32: <text>` (int64, float, double)
///   `select_cols should match output size (<k> select_cols, <n> record_defaults)`
///   `select_cols should be strictly increasing indices`
///   `select_cols should be non-negative indices`
/// and for malformed quoting TF's texts followed by the place, which TF does
/// not name (<c> is the column index in the record):
///   `Quoted field has to end with quote followed by delim or end (field <c> in record
///   <r>)` `Quote inside a string has to be escaped by another quote (field <c> in record
///   <r>)` `Unquoted fields cannot have quotes/CRLFs inside (field <c> in record <r>)`
std::vector<tensor> decode_csv(const tensor& records,
                               const std::vector<tensor>& record_defaults,
                               const std::string& field_delim = ",",
                               bool use_quote_delim = true,
                               const std::string& na_value = "",
                               const std::vector<int64_t>& select_cols = {});

/// Packed records (reader::read_values_up_to): the same, the outputs of
/// shape [records.size()], without a string per record. Ends that go back
/// or past the text throw invalid_argument_error `decode_csv: packed record
/// <r> ends at <e>, outside <from>..<size> (...)`.
std::vector<tensor> decode_csv(const packed_values& records,
                               const std::vector<tensor>& record_defaults,
                               const std::string& field_delim = ",",
                               bool use_quote_delim = true,
                               const std::string& na_value = "",
                               const std::vector<int64_t>& select_cols = {});

/// One record: the outputs are scalars.
std::vector<tensor> decode_csv(const std::string& record,
                               const std::vector<tensor>& record_defaults,
                               const std::string& field_delim = ",",
                               bool use_quote_delim = true,
                               const std::string& na_value = "",
                               const std::vector<int64_t>& select_cols = {});

} // namespace quern
