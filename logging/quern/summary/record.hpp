#pragma once
// Moved to quern/format/record.hpp (TFRecord framing and CRC-32C); kept for
// programs that include it by its old name.
#include "quern/format/record.hpp"
