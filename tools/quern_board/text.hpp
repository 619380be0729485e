#pragma once

// How quern-board writes numbers and strings: the exact forms of `export`
// (which the html page reproduces byte for byte), JSON and base64.

#include <string>
#include <string_view>

namespace quern::board {

/// A float32 summary value as `export` writes it: printf "%.9g" (nine
/// significant digits, enough to read back the same float), "nan", "inf",
/// "-inf".
std::string format_value(double x);

/// A wall time exactly: the shortest decimal that reads back as the same
/// double, in fixed notation (std::to_chars); "nan", "inf", "-inf".
std::string format_wall_time(double x);

/// A field of a CSV line, quoted when it holds a comma, quote or line break.
std::string csv_field(const std::string& s);

/// A JSON string literal; '<' is escaped too so that the text can sit in an
/// HTML <script> element.
std::string json_string(std::string_view s);

/// A JSON number (shortest round-trip form), or null for NaN and infinities.
std::string json_number(double x);

std::string base64(std::string_view bytes);

/// Text for HTML element content and attribute values.
std::string html_escape(std::string_view s);

} // namespace quern::board
