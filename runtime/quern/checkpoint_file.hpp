#pragma once

// Checkpoint files (docs/resume.md, The checkpoint file; docs/semantics.md
// CK-2..CK-5): a step and named sections of bytes, each section its owner's
// (a queue's rows, a runner's held rows, a reader's state), in one file
// <dir>/ckpt-<step>.quern that is never half-written and is refused, with an
// error naming it and the problem, when it is damaged, foreign or newer:
//   quern::checkpoint_contents c;
//   c.step = 1000;
//   c.sections["reader/0"] = reader.serialize_state();
//   quern::write_checkpoint("ckpt", c);             // ckpt/ckpt-1000.quern, synced
//   std::vector<std::string> refused;
//   if (auto latest = quern::read_latest_checkpoint("ckpt", &refused))
//     reader.restore_state(latest->sections.at("reader/0"));

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace quern {

/// The format version this quern writes, and the newest it reads.
constexpr uint32_t checkpoint_format_version = 1;

/// What a checkpoint holds.
struct checkpoint_contents {
  /// The consumer's step it was taken at (>= 0); it names the file.
  int64_t step = 0;
  /// Named sections ("queue/<name>", "runner/<name>", "reader/<i>", ...):
  /// opaque bytes of their owners. Names are 1..4096 bytes.
  std::map<std::string, std::string> sections;

  friend bool operator==(const checkpoint_contents& a, const checkpoint_contents& b) {
    return a.step == b.step && a.sections == b.sections;
  }
  friend bool operator!=(const checkpoint_contents& a, const checkpoint_contents& b) {
    return !(a == b);
  }
};

/// `<dir>/ckpt-<step>.quern`.
std::string checkpoint_path(const std::string& dir, int64_t step);

/// The file's bytes (the format of docs/resume.md), for tests and tools.
std::string encode_checkpoint(const checkpoint_contents& c);

/// Writes `<dir>/ckpt-<step>.quern` (creating dir) whole (CK-2): a
/// temporary file beside it (O_CREAT | O_EXCL | O_NOFOLLOW), fsync'd,
/// renamed into place, the directory fsync'd. An older file of the same step
/// is replaced. Then removes the oldest checkpoint files of dir beyond
/// `keep_last`, never the one just written (CK-3; a file that cannot be
/// removed is left for the next write). Returns the path. Throws
/// invalid_argument_error for keep_last < 1, a negative step or a bad section
/// name, and the I/O error of a failed write (`cannot write checkpoint
/// '<path>': <OS reason>`, coded as TensorFlow codes errno), which leaves
/// every earlier checkpoint as it was.
std::string write_checkpoint(const std::string& dir, const checkpoint_contents& c,
                             int keep_last = 3);

/// How write_checkpoint writes a file (CK-2, CK-3, CK-6).
struct checkpoint_write_options {
  /// The checkpoint files kept: the oldest beyond these are removed.
  int keep_last = 3;
  /// Sync the file before its rename and the directory after it (CK-2):
  /// once write_checkpoint returns, the file is on disk. false: renamed into
  /// place without waiting for the disk. A crash of the process loses
  /// nothing then (the system writes its files out), but a crash of the
  /// machine may lose the file or leave it damaged, which
  /// read_latest_checkpoint passes over (CK-5).
  bool sync = true;
  /// A checkpoint file this write never removes, whatever keep_last: the
  /// newest synced one, while the newer ones are not synced (empty: none).
  std::string keep_also;
};

/// write_checkpoint(dir, c, keep_last) with every option (CK-6).
std::string write_checkpoint(const std::string& dir, const checkpoint_contents& c,
                             const checkpoint_write_options& opts);

/// Reads and verifies one file (CK-4). Throws data_loss_error `checkpoint
/// '<path>': <problem>` for a file that is not a whole checkpoint of a
/// version this quern reads: not a quern checkpoint (an empty file, a
/// directory or anything else that is not a regular file, other bytes than
/// the magic), written by a newer quern (format
/// version N, this one reads up to M), truncated at byte N, a checksum
/// mismatch (of the header, of a section's header, of section "x", of the
/// whole file), a duplicate section, trailing bytes. A file that cannot be
/// opened or read throws its I/O error (not_found_error...), naming it.
checkpoint_contents read_checkpoint(const std::string& path);

/// The checkpoint files of dir (named ckpt-<step>.quern), oldest step first;
/// none when dir does not exist. Throws the I/O error of a dir that cannot be
/// listed.
std::vector<std::string> list_checkpoints(const std::string& dir);

/// The newest checkpoint of dir that reads (CK-5). Each newer one that was
/// refused is described in *refused (its error, which names the file), so a
/// damaged newest falls back to the previous one and says so; *path is set to
/// the file read. nullopt when none reads or none exists.
std::optional<checkpoint_contents>
read_latest_checkpoint(const std::string& dir,
                       std::vector<std::string>* refused = nullptr,
                       std::string* path = nullptr);

} // namespace quern
