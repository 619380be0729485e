#pragma once

// The summary vocabulary that crosses actor boundaries: summary values,
// events, the summary writer's atoms and its typed actor interface
// (docs/semantics.md, Summary writing). The encoding into TensorBoard's protobuf format
// lives in logging/ (quern/summary/*.hpp); this header depends on CAF only.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/variant.hpp>

#include "quern/atoms.hpp"
#include "quern/detail/float_bits.hpp"

namespace quern {

// -- atoms of the summary writer (at most 10 characters each) --
/// add_scalars(batch): scalar events, written in order, stamped by the sender.
using add_scalars_atom = caf::atom_constant<caf::atom("add_scalar")>;
/// add_summary(values, step): one Event{summary}, wall_time stamped on receipt (SW-6/7).
using add_summary_atom = caf::atom_constant<caf::atom("add_summ")>;
/// add_events(events): Events written as they are (SW-7 add_event).
using add_events_atom = caf::atom_constant<caf::atom("add_events")>;
/// flush(): everything received so far reaches the file (and the disk, SW-4).
using writer_flush_atom = caf::atom_constant<caf::atom("sw_flush")>;
/// reopen(): a closed writer accepts events again, into a new file (SW-5).
using writer_reopen_atom = caf::atom_constant<caf::atom("sw_reopen")>;
/// status(): where the writer stands (writer_status).
using writer_status_atom = caf::atom_constant<caf::atom("sw_status")>;
/// (internal) the writer's timer: hand held events to the OS.
using writer_tick_atom = caf::atom_constant<caf::atom("sw_tick")>;
// close() uses quern::close_atom (atoms.hpp).

/// Which member of Summary.Value's `value` oneof is set (SW-32), in the
/// order of summary_value::value's alternatives.
enum class summary_kind : uint8_t {
  scalar = 0,    // simple_value
  histogram = 1, // histo
  image = 2,     // image (already encoded, e.g. PNG)
  tensor = 3,    // tensor (string tensors: the text plugin, SW-42)
};

/// HistogramProto (SW-33).
struct histogram_data {
  double min = 0;
  double max = 0;
  double num = 0;
  double sum = 0;
  double sum_squares = 0;
  std::vector<double> bucket_limit;
  std::vector<double> bucket;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, histogram_data& x) {
    // Bounds are often infinite: every float crosses as its bits (float_bits.hpp).
    detail::float_bits min{x.min}, max{x.max}, num{x.num}, sum{x.sum},
        sum_squares{x.sum_squares};
    detail::float_bits_vector bucket_limit{x.bucket_limit}, bucket{x.bucket};
    return f(caf::meta::type_name("quern::histogram_data"), min, max, num, sum,
             sum_squares, bucket_limit, bucket);
  }
};

/// Summary.Image (SW-32): the bytes are an encoded image (PNG), not pixels.
struct image_data {
  int32_t height = 0;
  int32_t width = 0;
  /// 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA, 5 DIGITAL_YUV, 6 BGRA.
  int32_t colorspace = 0;
  std::string encoded;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, image_data& x) {
    return f(caf::meta::type_name("quern::image_data"), x.height, x.width, x.colorspace,
             x.encoded);
  }
};

/// Summary.Value.tensor as quern writes it (SW-42): a DT_STRING TensorProto
/// with these string_val entries and this shape (empty shape = scalar), what
/// TensorBoard's text plugin reads.
struct text_tensor {
  std::vector<std::string> strings;
  std::vector<int64_t> shape;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, text_tensor& x) {
    return f(caf::meta::type_name("quern::text_tensor"), x.strings, x.shape);
  }
};

namespace detail {

/// A summary value's `value` as it travels: its kind and the members of
/// every kind (those of other kinds empty). caf::variant's own inspect
/// throws on a type tag it does not know (CAF 0.17), which would let a
/// corrupt message end the process; read this way, it is an error.
struct summary_value_wire {
  uint8_t kind = 0;
  float simple_value = 0;
  histogram_data histo;
  image_data image;
  text_tensor text;
};

summary_value_wire
to_wire(const caf::variant<float, histogram_data, image_data, text_tensor>& value);
caf::error from_wire(summary_value_wire&& w,
                     caf::variant<float, histogram_data, image_data, text_tensor>& value);

} // namespace detail

/// One Summary.Value: a tag, optional metadata and one value.
struct summary_value {
  std::string tag;
  /// Summary.Value's `value` oneof (SW-32), in summary_kind's order:
  /// simple_value (TensorFlow converts to float32, SW-40), histo, image,
  /// tensor.
  caf::variant<float, histogram_data, image_data, text_tensor> value;
  /// SummaryMetadata (SW-32); written only when one of them is non-empty.
  std::string plugin_name;
  std::string plugin_content;
  std::string display_name;
  std::string description;

  summary_kind kind() const { return static_cast<summary_kind>(value.index()); }

  bool has_metadata() const {
    return !plugin_name.empty() || !plugin_content.empty() || !display_name.empty() ||
           !description.empty();
  }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, summary_value& x) {
    auto name = caf::meta::type_name("quern::summary_value");
    if constexpr (Inspector::reads_state) {
      auto w = detail::to_wire(x.value);
      detail::float_bits simple_value{w.simple_value};
      return f(name, x.tag, w.kind, simple_value, w.histo, w.image, w.text, x.plugin_name,
               x.plugin_content, x.display_name, x.description);
    } else {
      detail::summary_value_wire w;
      detail::float_bits simple_value{w.simple_value};
      auto load = [&]() -> caf::error {
        return detail::from_wire(std::move(w), x.value);
      };
      return f(name, x.tag, w.kind, simple_value, w.histo, w.image, w.text, x.plugin_name,
               x.plugin_content, x.display_name, x.description,
               caf::meta::load_callback(load));
    }
  }
};

/// One Event (SW-30/31): when, at which step, and one member of Event's
/// `what` oneof, each alternative with only its own fields.
struct summary_event {
  /// No member set.
  struct none {
    template <class Inspector>
    friend typename Inspector::result_type inspect(Inspector& f, none&) {
      return f(caf::meta::type_name("quern::summary_event::none"));
    }
  };
  /// The version string of the file ("brain.Event:2", SW-12).
  struct file_version {
    std::string version;

    template <class Inspector>
    friend typename Inspector::result_type inspect(Inspector& f, file_version& x) {
      return f(caf::meta::type_name("quern::summary_event::file_version"), x.version);
    }
  };
  /// A serialized GraphDef.
  struct graph_def {
    std::string bytes;

    template <class Inspector>
    friend typename Inspector::result_type inspect(Inspector& f, graph_def& x) {
      return f(caf::meta::type_name("quern::summary_event::graph_def"), x.bytes);
    }
  };
  /// A Summary: its values.
  struct summary {
    std::vector<summary_value> values;

    template <class Inspector>
    friend typename Inspector::result_type inspect(Inspector& f, summary& x) {
      return f(caf::meta::type_name("quern::summary_event::summary"), x.values);
    }
  };
  /// A LogMessage.
  struct log_message {
    /// 0 unknown, 10 debugging, 20 info, 30 warn, 40 error, 50 fatal.
    int32_t level = 0;
    std::string message;

    template <class Inspector>
    friend typename Inspector::result_type inspect(Inspector& f, log_message& x) {
      return f(caf::meta::type_name("quern::summary_event::log_message"), x.level,
               x.message);
    }
  };
  /// A SessionLog (SW-7 add_session_log).
  struct session_log {
    /// 0 unspecified, 1 start, 2 stop, 3 checkpoint (session_status).
    int32_t status = 0;
    std::string msg;
    std::string checkpoint_path;

    template <class Inspector>
    friend typename Inspector::result_type inspect(Inspector& f, session_log& x) {
      return f(caf::meta::type_name("quern::summary_event::session_log"), x.status, x.msg,
               x.checkpoint_path);
    }
  };
  /// A TaggedRunMetadata: a tag and a serialized RunMetadata.
  struct tagged_run_metadata {
    std::string tag;
    std::string run_metadata;

    template <class Inspector>
    friend typename Inspector::result_type inspect(Inspector& f, tagged_run_metadata& x) {
      return f(caf::meta::type_name("quern::summary_event::tagged_run_metadata"), x.tag,
               x.run_metadata);
    }
  };
  /// A serialized MetaGraphDef.
  struct meta_graph_def {
    std::string bytes;

    template <class Inspector>
    friend typename Inspector::result_type inspect(Inspector& f, meta_graph_def& x) {
      return f(caf::meta::type_name("quern::summary_event::meta_graph_def"), x.bytes);
    }
  };
  /// Event's `what` oneof, in the order of its field numbers.
  using what_type = caf::variant<none, file_version, graph_def, summary, log_message,
                                 session_log, tagged_run_metadata, meta_graph_def>;

  /// Seconds since the epoch; 0 is not written (proto3, SW-35).
  double wall_time = 0;
  /// 0 is not written (SW-35), the same bytes as "no step" (SW-6).
  int64_t step = 0;
  what_type what = summary{};
};

namespace detail {

/// A summary event's `what` as it travels: its index and the members of every
/// alternative (those of the others empty), for the reason of
/// summary_value_wire.
struct summary_event_wire {
  uint8_t kind = 0;
  summary_event::file_version file_version;
  summary_event::graph_def graph_def;
  summary_event::summary summary;
  summary_event::log_message log_message;
  summary_event::session_log session_log;
  summary_event::tagged_run_metadata tagged_run_metadata;
  summary_event::meta_graph_def meta_graph_def;
};

summary_event_wire to_wire(const summary_event::what_type& what);
caf::error from_wire(summary_event_wire&& w, summary_event::what_type& what);

} // namespace detail

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, summary_event& x) {
  auto name = caf::meta::type_name("quern::summary_event");
  detail::float_bits wall_time{x.wall_time};
  if constexpr (Inspector::reads_state) {
    auto w = detail::to_wire(x.what);
    return f(name, wall_time, x.step, w.kind, w.file_version, w.graph_def, w.summary,
             w.log_message, w.session_log, w.tagged_run_metadata, w.meta_graph_def);
  } else {
    detail::summary_event_wire w;
    auto load = [&]() -> caf::error { return detail::from_wire(std::move(w), x.what); };
    return f(name, wall_time, x.step, w.kind, w.file_version, w.graph_def, w.summary,
             w.log_message, w.session_log, w.tagged_run_metadata, w.meta_graph_def,
             caf::meta::load_callback(load));
  }
}

/// The fast path: one Event{wall_time, step, summary{value{tag, simple_value}}}.
struct scalar_event {
  double wall_time = 0;
  int64_t step = 0;
  std::string tag;
  float value = 0;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, scalar_event& x) {
    detail::float_bits wall_time{x.wall_time};
    detail::float_bits value{x.value};
    return f(caf::meta::type_name("quern::scalar_event"), wall_time, x.step, x.tag,
             value);
  }
};

/// What status() reports.
struct writer_status {
  std::string logdir;
  /// The file being written, or the last one written (empty: none yet).
  std::string path;
  /// Events accepted into the current file (the file_version record excluded).
  uint64_t events = 0;
  /// Bytes handed to the operating system for the current file.
  uint64_t bytes_written = 0;
  /// Files this writer has created.
  uint32_t files = 0;
  bool closed = false;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, writer_status& x) {
    return f(caf::meta::type_name("quern::writer_status"), x.logdir, x.path, x.events,
             x.bytes_written, x.files, x.closed);
  }
};

/// The summary writer (FileWriter, docs/semantics.md SW-1..SW-7, see
/// logging/quern/summary/summary_writer.hpp). Every request gets an answer:
/// the result or a quern error.
///   add_scalars(batch)        events in order
///   add_summary(values, step) one Event{summary}, wall_time = now
///   add_summary(values, step, wall_time)  the same, stamped by the sender
///   add_events(events)        Events as they are
///   flush() -> writer_status  written and (unless disabled) synced to disk
///   close()                   flush, close the file; later adds are dropped
///   reopen()                  a closed writer accepts events into a new file
///   status() -> writer_status
/// The add_* messages may also be sent one-way: a write error is then kept
/// and reported by the next request (any add_* request, flush or close).
using summary_writer_actor = caf::typed_actor<
    caf::reacts_to<add_scalars_atom, std::vector<scalar_event>>,
    caf::reacts_to<add_summary_atom, std::vector<summary_value>, int64_t>,
    caf::reacts_to<add_summary_atom, std::vector<summary_value>, int64_t, double>,
    caf::reacts_to<add_events_atom, std::vector<summary_event>>,
    caf::replies_to<writer_flush_atom>::with<writer_status>, caf::reacts_to<close_atom>,
    caf::reacts_to<writer_reopen_atom>,
    caf::replies_to<writer_status_atom>::with<writer_status>,
    caf::reacts_to<writer_tick_atom>>;

} // namespace quern
