#pragma once

// Where a pipeline's time goes (docs/input.md, "Where the pipeline waits";
// docs/semantics.md TL-1..TL-11): what pipeline::telemetry() returns. The
// structs are part of the messages' vocabulary (quern/telemetry.hpp), as a
// checkpoint member of another process sends its figures to the chief's
// pipeline (TL-10).

#include "quern/telemetry.hpp"
