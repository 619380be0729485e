// A pipeline's snapshot as a checkpoint file's sections, and back
// (docs/resume.md, "The file"): `queue/<name>`, `part/<name>`, `held/<queue>`
// and the members' `member/<member>/...`.

#include "quern/error.hpp"
#include "quern/pipeline.hpp"
#include "quern/state_bytes.hpp"

namespace quern {

namespace {

/// The version of a `held/<queue>` section's bytes.
constexpr uint8_t held_version = 1;

/// A `held/<queue>` section: a format version, the batches' count, then
/// each batch.
std::string encode_held(const std::vector<element>& batches) {
  state_writer w;
  w.write_u8(held_version).write_u64(batches.size());
  for (auto& b : batches)
    w.write_element(b);
  return w.take();
}

std::vector<element> decode_held(std::string_view bytes, const std::string& what) {
  state_reader r{bytes, what};
  auto version = r.read_u8();
  if (version != held_version)
    throw data_loss_error(what + ": version " + std::to_string(version) +
                          ", this quern reads version " + std::to_string(held_version));
  auto count = r.read_u64();
  std::vector<element> out;
  for (uint64_t i = 0; i < count; ++i) {
    out.push_back(r.read_element());
    int64_t rows = 0;
    try {
      rows = out.back().batch_size();
    } catch (const invalid_argument_error&) {
    }
    if (rows < 1)
      throw data_loss_error(what + ": batch " + std::to_string(i) + " has no rows");
  }
  r.expect_end();
  return out;
}

} // namespace

checkpoint_contents pipeline::to_checkpoint(const pipeline_snapshot& s) {
  checkpoint_contents c;
  c.step = s.step;
  for (auto& [name, q] : s.queues)
    c.sections.emplace("queue/" + name, encode_queue_state(q));
  for (auto& [name, bytes] : s.parts)
    c.sections.emplace("part/" + name, bytes);
  for (auto& [name, batches] : s.held)
    c.sections.emplace("held/" + name, encode_held(batches));
  for (auto& [member, sections] : s.members)
    for (auto& [section, bytes] : sections)
      c.sections.emplace("member/" + member + "/" + section, bytes);
  return c;
}

pipeline_snapshot pipeline::from_checkpoint(const checkpoint_contents& c) {
  pipeline_snapshot s;
  s.step = c.step;
  for (auto& [section, bytes] : c.sections) {
    if (section.rfind("queue/", 0) == 0) {
      auto name = section.substr(6);
      s.queues.emplace(
          name, decode_queue_state(bytes, "the checkpoint of queue '" + name + "'"));
    } else if (section.rfind("part/", 0) == 0) {
      s.parts.emplace(section.substr(5), bytes);
    } else if (section.rfind("held/", 0) == 0) {
      auto name = section.substr(5);
      s.held.emplace(name, decode_held(bytes, "the checkpoint of the batches held by "
                                              "the batch reader of queue '" +
                                                  name + "'"));
    } else if (auto slash = section.find('/', 7);
               section.rfind("member/", 0) == 0 && slash != std::string::npos &&
               slash > 7 &&
               (section.compare(slash + 1, 6, "queue/") == 0 ||
                section.compare(slash + 1, 5, "part/") == 0)) {
      s.members[section.substr(7, slash - 7)].emplace(section.substr(slash + 1), bytes);
    } else {
      throw data_loss_error("a pipeline checkpoint has no section '" + section + "'");
    }
  }
  return s;
}

} // namespace quern
