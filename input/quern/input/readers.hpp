#pragma once

// Readers with TensorFlow 1.x's semantics (docs/semantics.md RD-1..RD-7): a
// reader takes work units (file names) from a queue of scalar strings and
// turns each file into (key, value) records, as TF's ReaderBase does. Every
// kind has TF's serialize_state / restore_state (RD-9), and hands its work
// unit in progress to another reader (current_work, continue_work: RD-10).
//
// These readers BLOCK: they read files and wait on a blocking_queue. Use
// them in detached actors (e.g. a queue runner's blocking_op worker) or in
// plain threads, never inside an event-based actor (docs/input.md).
//
// Compression (RD-8): FixedLengthRecordReader's `encoding` and
// TFRecordReader's `compression_type` take "", "ZLIB" or "GZIP", as TF's: the
// records are those of the decompressed bytes (keys count them too). Damaged
// compressed data, or a file that ends inside its compressed stream, throws
// data_loss_error naming the file and the compressed offset. Any other value
// is refused with INVALID_ARGUMENT (TF silently reads such files
// uncompressed). tf_record_writer (<quern/input/tf_record.hpp>) writes such
// files.
//
// Errors are thrown as quern::op_error subclasses named after TF's errors:
// out_of_range_error (the filename queue is closed and drained), not_found_error
// and other I/O errors `<file>; <OS reason>` (RD-3), data_loss_error
// (TFRecord corruption, RD-6), invalid_argument_error (bad arguments or a
// queue of the wrong signature, RD-1).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quern/blocking_queue.hpp"
#include "quern/element.hpp"
#include "quern/input/packed_values.hpp"
#include "quern/input/tf_record.hpp"

namespace quern {

/// One record: TF's (key, value) pair.
struct record {
  std::string key;
  std::string value;

  friend bool operator==(const record& a, const record& b) {
    return a.key == b.key && a.value == b.value;
  }
  friend bool operator!=(const record& a, const record& b) { return !(a == b); }
};

/// The records of one open file (what each TF reader kind does with a work
/// unit). Sources are created by the open_* functions below, which throw the
/// file's open error (not_found_error `<file>; No such file or directory`...).
class record_source {
public:
  virtual ~record_source() = default;

  /// Produces the next record into `out` and returns true, or returns false
  /// at the end of the file (then `out` is unspecified). Throws op_error for
  /// a failed read (e.g. data_loss_error for a corrupt TFRecord).
  virtual bool next(record& out) = 0;

  /// next()'s value appended to `block`, without the key, for callers that
  /// drop it (a text line's `<file>:<line>` costs an allocation). False at
  /// the end of the file, `block` as it was.
  virtual bool append_value(std::string& block);

  /// Whether the source already knows that next() will return false (the
  /// whole-file source after its one record): the reader then completes the
  /// work unit in the same call, as TF does.
  virtual bool exhausted() const { return false; }

  /// Where the next record starts (RD-9): a byte offset of the file, of its
  /// decompressed bytes for a compressed one; it moves only when a record is
  /// produced. What a reader's serialize_state stores. A source that cannot
  /// be positioned says nothing (the default).
  virtual std::optional<uint64_t> offset() const { return std::nullopt; }
};

/// Where a reader is in one work unit (RD-9, RD-10): what it takes to go on
/// reading it exactly there, with the same records and keys, by this reader
/// or by another of the same kind and options.
struct work_position {
  /// The work unit: the file name.
  std::string work;
  /// Where its next record starts: a byte offset of the file, or of its
  /// decompressed bytes when it is compressed (record_source::offset).
  uint64_t offset = 0;
  /// Records produced from this work unit so far (a text line's key counts
  /// on from them, a fixed-length record's number too).
  int64_t records = 0;

  friend bool operator==(const work_position& a, const work_position& b) {
    return a.work == b.work && a.offset == b.offset && a.records == b.records;
  }
  friend bool operator!=(const work_position& a, const work_position& b) {
    return !(a == b);
  }
};

/// TextLineReader (RD-4): one record per line, without its "\n" and one
/// trailing "\r"; a last line without a newline is a record; interior empty
/// lines are "" records. Key `<file>:<1-based physical line>`, counting the
/// `skip_header_lines` skipped lines. skip_header_lines must be >= 0.
std::unique_ptr<record_source> open_text_line_source(const std::string& file,
                                                     int64_t skip_header_lines = 0);

/// Sizes of a FixedLengthRecordReader (RD-5); all must be >= 0.
struct fixed_length_options {
  int64_t record_bytes = 0;
  int64_t header_bytes = 0;
  int64_t footer_bytes = 0;
  /// Distance between record starts; 0 means record_bytes.
  int64_t hop_bytes = 0;
  /// "", "ZLIB" or "GZIP": the sizes apply to the decompressed bytes (RD-8).
  std::string encoding;
};

/// FixedLengthRecordReader (RD-5): record k (key `<file>:<k>`, 0-based)
/// starts at header_bytes + k * hop and is produced only if record_bytes +
/// footer_bytes bytes are available from its start; its value is the first
/// record_bytes of them. A trailing partial record is dropped silently; a
/// file shorter than header_bytes has no records (TF fails that read with
/// OUT_OF_RANGE, which a queue runner would take for the end of input).
/// As in TF, record_bytes == 0 with hop_bytes == 0 never advances: every
/// file then yields an endless stream of empty records.
std::unique_ptr<record_source> open_fixed_length_source(const std::string& file,
                                                        const fixed_length_options& opts);

/// TFRecordReader (RD-6): value = payload, key = `<file>:<offset of the
/// record's length field>`. Damage throws data_loss_error `corrupted record at
/// <X>` / `truncated record at <X>` (SW-22, offsets as logging's
/// record_reader reports them); a clean end of file ends the file.
/// Compressed (RD-8): offsets count decompressed bytes, and every error names
/// the file: `<file>; corrupted record at <X> (an offset in the decompressed
/// GZIP data)`, `<file>; corrupt GZIP data at compressed offset <C>: ...`,
/// `<file>; truncated GZIP data: ...`.
std::unique_ptr<record_source>
open_tf_record_source(const std::string& file, const tf_record_options& options = {});

/// WholeFileReader (RD-7): one record per file (also for an empty file):
/// key = the file name, value = its entire contents.
std::unique_ptr<record_source> open_whole_file_source(const std::string& file);

/// TF's ReaderBase: takes work units from a queue of file names and reads
/// each through a record_source. Thread-safe: calls on one reader are
/// serialised by a lock held while they block (as TF's reader ops hold the
/// reader's lock). Movable, not copyable (wrap it in a shared_ptr to
/// capture it in a std::function such as a queue runner's blocking_op).
class reader {
public:
  /// Opens one work unit. Throws the open error.
  using source_factory =
      std::function<std::unique_ptr<record_source>(const std::string& work)>;
  /// Returns the next work unit; throws out_of_range_error when there is none.
  using work_source = std::function<std::string()>;

  explicit reader(source_factory open);
  virtual ~reader();
  reader(reader&&) noexcept;
  reader& operator=(reader&&) noexcept;

  /// RD-1: the next record, dequeuing file names from `filenames` as needed
  /// (moving to the next file within the same call, skipping files without
  /// records). The queue must have a single string component, else
  /// invalid_argument_error `Expected single component queue` / `Expected
  /// queue with single string component` (checked from the queue's spec
  /// before anything is dequeued) / `Expected to dequeue a one-element string
  /// tensor` (checked on the dequeued element). Throws the queue's
  /// out_of_range_error when it is closed and drained (RD-1) and a file's
  /// open error (RD-3); a file whose open failed is dropped (the next read
  /// dequeues the next file). An error while reading an opened file is
  /// thrown again by every later read of that file until reset() (TF retries
  /// the failing read, which fails the same way).
  record read(blocking_queue& filenames);
  /// The same with work units from any source (a queue_reader, a list...).
  record read(const work_source& next_work);

  /// RD-2: 1..n records, never crossing into a new work unit once a record
  /// was produced in this call. n == 0 returns no records and dequeues
  /// nothing (as TF); n < 0 throws invalid_argument_error `num_records must
  /// be >= 0 not <n>` (TF fails in its allocator). Errors as read(); an error of the
  /// current file after some records were produced in this call is deferred
  /// to the next call (TF would fail the call and drop those records).
  std::vector<record> read_up_to(blocking_queue& filenames, int64_t n);
  std::vector<record> read_up_to(const work_source& next_work, int64_t n);

  /// read_up_to's values without their keys (`_, lines = reader.read_up_to(...)`),
  /// packed end to end in one string, as decode_csv takes them: the same
  /// records, counts, work-unit boundaries and errors, with no key made and
  /// no string per value (for text lines, three allocations a line less).
  packed_values read_values_up_to(blocking_queue& filenames, int64_t n);
  packed_values read_values_up_to(const work_source& next_work, int64_t n);

  /// Records produced since construction or reset().
  int64_t num_records_produced() const;
  /// Work units finished (read to their end) since construction or reset().
  int64_t num_work_units_completed() const;
  /// Zeroes the counters and drops the current work unit.
  void reset();

  /// RD-9: the reader's state as bytes (the state codec, quern/state_bytes.hpp):
  /// its kind and options, the work units completed, the records produced,
  /// and the work unit in progress with its position (work_position). A
  /// reader given these bytes by restore_state goes on exactly where this
  /// one is: the same records, keys and counters as if it had never stopped.
  /// A read error of the current unit is not kept: the restored reader meets
  /// it again when it reads there. Throws unimplemented_error for a reader
  /// made from a plain source_factory (its sources cannot be positioned).
  std::string serialize_state() const;
  /// RD-9: makes this reader the one serialize_state described: its
  /// counters, and its work unit reopened at the saved position (a plain
  /// file by seeking, a compressed one by decompressing up to it). Throws
  /// invalid_argument_error `cannot restore the state of a <kind>(<options>)
  /// into a <kind>(<options>)` for the state of another kind or options,
  /// data_loss_error `reader state: ...` for bytes that do not read, the
  /// file's open error (not_found_error...) for a work unit that is gone, and
  /// data_loss_error `<file>; shorter than the saved position: ...` for one
  /// that no longer reaches its position. After an error the reader is as it
  /// was before the call.
  void restore_state(std::string_view state);

  /// RD-10: the work unit in progress, if any, as a value another reader of
  /// the same kind and options can continue (continue_work).
  std::optional<work_position> current_work() const;
  /// RD-10: makes `position` this reader's work unit in progress, opened at
  /// its position, so that the next reads continue it exactly (records and
  /// keys as the reader it came from would have produced) before any new work
  /// is dequeued. Its records count in num_records_produced() from here on,
  /// and its end as a completed work unit. Throws failed_precondition_error
  /// when a work unit is already in progress, invalid_argument_error for
  /// negative records, and the open errors of restore_state; after an error
  /// the reader is as it was.
  void continue_work(const work_position& position);
  /// RD-11: where the last read_up_to or read_values_up_to began: its work
  /// unit at the position of the first record it produced (a read never
  /// spans two units, RD-2). nullopt when that read produced none, or for a
  /// reader made from a plain source_factory. With serialize_state taken
  /// before the read, what undoes it: restore_state, and this unit continued
  /// (continue_work) when the read had started it.
  std::optional<work_position> last_read_start() const;

protected:
  /// Opens a work unit at a position (a reader kind whose sources can be
  /// positioned: every kind of this header).
  using positioned_source_factory =
      std::function<std::unique_ptr<record_source>(const work_position& at)>;
  /// A reader kind with state: `kind` (TF's class name) and `options` (those
  /// of its options that change the records) are stored by serialize_state
  /// and must match in restore_state.
  reader(std::string kind, std::string options, source_factory open,
         positioned_source_factory open_at);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// tf.TextLineReader(skip_header_lines): throws invalid_argument_error
/// `skip_header_lines must be >= 0 not <n>`.
class text_line_reader : public reader {
public:
  explicit text_line_reader(int64_t skip_header_lines = 0);
};

/// tf.FixedLengthRecordReader(record_bytes, header_bytes, footer_bytes,
/// hop_bytes, encoding): throws invalid_argument_error `<attr> must be >= 0
/// not <n>`, or `Unsupported encoding "<e>": expected "", "ZLIB" or "GZIP"`.
/// Compressed files are decompressed with TF's 256 KiB buffers.
class fixed_length_record_reader : public reader {
public:
  explicit fixed_length_record_reader(int64_t record_bytes, int64_t header_bytes = 0,
                                      int64_t footer_bytes = 0, int64_t hop_bytes = 0,
                                      const std::string& encoding = {});
};

/// tf.TFRecordReader(options): compression_type "", "ZLIB" or "GZIP", else
/// invalid_argument_error `Unsupported compression_type "<c>": expected "",
/// "ZLIB" or "GZIP"`; with tf_record_options, also the buffer sizes
/// compressed files are read with (invalid_argument_error outside 1 B..1 GiB).
class tf_record_reader : public reader {
public:
  explicit tf_record_reader(const std::string& compression_type = {});
  explicit tf_record_reader(const tf_record_options& options);
};

/// tf.WholeFileReader().
class whole_file_reader : public reader {
public:
  whole_file_reader();
};

/// (key, value) as an element of two scalar strings, for enqueueing a record
/// into an example queue of {string, string}.
element record_element(const record& r);
/// Records as a batch for enqueue_many: two string tensors of shape [n].
element record_batch(const std::vector<record>& rs);

} // namespace quern
