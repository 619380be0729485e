#include <caf/actor_system_config.hpp>
#include <caf/detail/type_list.hpp>

#include "quern/detail/registration.hpp"
#include "quern/error.hpp"
#include "quern/summary.hpp"

namespace quern::detail {

summary_value_wire
to_wire(const caf::variant<float, histogram_data, image_data, text_tensor>& value) {
  summary_value_wire w;
  w.kind = static_cast<uint8_t>(value.index());
  struct fill {
    summary_value_wire& w;
    void operator()(float x) { w.simple_value = x; }
    void operator()(const histogram_data& x) { w.histo = x; }
    void operator()(const image_data& x) { w.image = x; }
    void operator()(const text_tensor& x) { w.text = x; }
  };
  caf::visit(fill{w}, value);
  return w;
}

caf::error
from_wire(summary_value_wire&& w,
          caf::variant<float, histogram_data, image_data, text_tensor>& value) {
  switch (static_cast<summary_kind>(w.kind)) {
  case summary_kind::scalar:
    value = w.simple_value;
    return caf::none;
  case summary_kind::histogram:
    value = std::move(w.histo);
    return caf::none;
  case summary_kind::image:
    value = std::move(w.image);
    return caf::none;
  case summary_kind::tensor:
    value = std::move(w.text);
    return caf::none;
  }
  return make_error(error_code::invalid_argument,
                    "corrupt summary value: unknown kind " + std::to_string(w.kind));
}

summary_event_wire to_wire(const summary_event::what_type& what) {
  summary_event_wire w;
  w.kind = static_cast<uint8_t>(what.index());
  struct fill {
    summary_event_wire& w;
    void operator()(const summary_event::none&) {}
    void operator()(const summary_event::file_version& x) { w.file_version = x; }
    void operator()(const summary_event::graph_def& x) { w.graph_def = x; }
    void operator()(const summary_event::summary& x) { w.summary = x; }
    void operator()(const summary_event::log_message& x) { w.log_message = x; }
    void operator()(const summary_event::session_log& x) { w.session_log = x; }
    void operator()(const summary_event::tagged_run_metadata& x) {
      w.tagged_run_metadata = x;
    }
    void operator()(const summary_event::meta_graph_def& x) { w.meta_graph_def = x; }
  };
  caf::visit(fill{w}, what);
  return w;
}

caf::error from_wire(summary_event_wire&& w, summary_event::what_type& what) {
  static_assert(caf::detail::tl_size<summary_event::what_type::types>::value == 8,
                "a new alternative of summary_event::what needs a case here");
  switch (w.kind) {
  case 0:
    what = summary_event::none{};
    return caf::none;
  case 1:
    what = std::move(w.file_version);
    return caf::none;
  case 2:
    what = std::move(w.graph_def);
    return caf::none;
  case 3:
    what = std::move(w.summary);
    return caf::none;
  case 4:
    what = std::move(w.log_message);
    return caf::none;
  case 5:
    what = std::move(w.session_log);
    return caf::none;
  case 6:
    what = std::move(w.tagged_run_metadata);
    return caf::none;
  case 7:
    what = std::move(w.meta_graph_def);
    return caf::none;
  }
  return make_error(error_code::invalid_argument,
                    "corrupt summary event: unknown kind " + std::to_string(w.kind));
}

void add_summary_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<histogram_data>("quern::histogram_data");
  cfg.add_message_type<image_data>("quern::image_data");
  cfg.add_message_type<text_tensor>("quern::text_tensor");
  cfg.add_message_type<summary_value>("quern::summary_value");
  cfg.add_message_type<std::vector<summary_value>>("std::vector<quern::summary_value>");
  cfg.add_message_type<summary_event>("quern::summary_event");
  cfg.add_message_type<std::vector<summary_event>>("std::vector<quern::summary_event>");
  cfg.add_message_type<scalar_event>("quern::scalar_event");
  cfg.add_message_type<std::vector<scalar_event>>("std::vector<quern::scalar_event>");
  cfg.add_message_type<writer_status>("quern::writer_status");
  cfg.add_message_type<summary_writer_actor>("quern::summary_writer_actor");
}

} // namespace quern::detail
