// Fuzz target: TFRecord framing (quern/format/record.hpp) and the event-file
// reader (quern/summary/reader.hpp).
//
// The first byte picks the input's form:
//   even  the rest is a file as it is (almost always damaged: the CRCs);
//   odd   the rest is cut into payloads that are framed with append_record,
//         then damaged once as the input says (cut short, or one byte
//         changed), so that the reader sees valid records up to the damage.
//
// Promises checked (a broken one traps, so libFuzzer reports it):
// - read_records keeps every record before the damage: framing them again
//   with append_record gives back the input's bytes up to where reading
//   stopped; each offset is where its record starts.
// - Reading stops cleanly at the end of the input, or with a quern data_loss
//   error naming the problem and the place, `truncated record at X` or
//   `corrupted record at X`, X being where the failing checksummed read
//   started (the record's offset, or its payload's offset = offset + 12).
// - For framed input damaged once, the records and the error are exactly
//   the ones the damage predicts.
// - record_reader and read_record_file on a file of the same bytes give the
//   same records, offsets and error as read_records on the buffer (the file
//   reader's clean end is out_of_range "eof", and it keeps repeating its
//   error); read_event_file gives one event per record up to the first record
//   that is not an Event (`cannot parse Event at X`), each event the one
//   decode_event makes of that record.
// - record_reader over a byte_source of the same bytes gives them too; and
//   input/'s TFRecord source on a ZLIB-compressed file of them (small
//   buffers, so that every refill path runs) gives the same records with
//   their offsets as keys, and read_records' error with the file named.
// - The input itself as a GZIP or ZLIB file (almost always damaged data)
//   ends cleanly or with a data_loss error that names the file: never a
//   crash, a hang or another error.
//
// QUERN_FUZZ_SEEDS_OUT=<dir>: writes the seed corpus to <dir> and exits;
// tests/fuzz/make_seeds.sh runs it.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <unistd.h>

#include <google/protobuf/stubs/logging.h>
#include <zlib.h>

#include "quern/error.hpp"
#include "quern/format/record.hpp"
#include "quern/input/readers.hpp"
#include "quern/summary/event.hpp"
#include "quern/summary/reader.hpp"

#define QUERN_FUZZ_TARGET "fuzz_record_reader"
#include "fuzz_support.hpp"

namespace {

/// A temporary file for this process, removed at exit.
std::string temp_file;

const std::string& temp_path() {
  if (temp_file.empty()) {
    std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
    std::string name = dir + "/quern-fuzz-record-XXXXXX";
    int fd = ::mkstemp(name.data());
    if (fd < 0) {
      std::perror("mkstemp");
      std::abort();
    }
    ::close(fd);
    temp_file = name;
    std::atexit([] { std::remove(temp_file.c_str()); });
  }
  return temp_file;
}

using quern::fuzz::write_file;

bool same_error(const caf::error& a, const caf::error& b) {
  if (!a || !b)
    return !a && !b;
  return a.code() == b.code() && a.category() == b.category() &&
         quern::message_of(a) == quern::message_of(b);
}

bool same_event(const quern::summary_event& a, const quern::summary_event& b) {
  // Field by field would repeat summary.hpp; the encoding is a faithful
  // fingerprint (the event target checks that it is).
  return quern::encode_event(a) == quern::encode_event(b);
}

/// Where reading stopped: the end of the last record kept.
uint64_t consumed(const quern::record_list& list) {
  if (list.records.empty())
    return 0;
  return list.offsets.back() + quern::record_header_size + list.records.back().size() +
         quern::record_footer_size;
}

/// The general promises of read_records on `buf`.
void check_buffer_result(std::string_view buf, const quern::record_list& list) {
  PROMISE(list.records.size() == list.offsets.size());
  std::string again;
  for (size_t i = 0; i < list.records.size(); ++i) {
    PROMISE(list.offsets[i] == again.size());
    quern::append_record(again, list.records[i]);
  }
  PROMISE(again.size() <= buf.size());
  PROMISE(buf.substr(0, again.size()) == again);
  auto end = consumed(list);
  PROMISE(end == again.size());
  if (!list.error) {
    PROMISE(end == buf.size());
    return;
  }
  PROMISE(quern::is(list.error, quern::error_code::data_loss));
  auto msg = quern::message_of(list.error);
  auto truncated = "truncated record at ";
  auto corrupted = "corrupted record at ";
  bool is_truncated = msg.rfind(truncated, 0) == 0;
  bool is_corrupted = msg.rfind(corrupted, 0) == 0;
  PROMISE(is_truncated || is_corrupted);
  PROMISE(end < buf.size());
  auto at = std::string(msg.substr(20));
  PROMISE(!at.empty() && at.find_first_not_of("0123456789") == std::string::npos);
  auto x = std::strtoull(at.c_str(), nullptr, 10);
  PROMISE(x == end || x == end + quern::record_header_size);
  if (is_truncated && x == end)
    PROMISE(buf.size() - end <= quern::record_header_size);
  if (is_truncated && x != end)
    PROMISE(buf.size() - end > quern::record_header_size);
}

/// Reads `reader` to its end, each record and its offset as `list` has them;
/// returns the error that ended it (`payload`: the reader's buffer).
caf::error read_all_agreeing(quern::record_reader& reader, const quern::record_list& list,
                             std::string& payload) {
  size_t i = 0;
  caf::error err;
  for (;;) {
    auto offset = reader.offset();
    err = reader.next(payload);
    if (err)
      break;
    PROMISE(i < list.records.size());
    PROMISE(payload == list.records[i]);
    PROMISE(offset == list.offsets[i]);
    ++i;
  }
  PROMISE(i == list.records.size());
  return err;
}

/// The file readers agree with read_records on the same bytes.
void check_file_readers(std::string_view buf, const quern::record_list& list) {
  const auto& path = temp_path();
  write_file(path, buf);

  quern::record_reader reader{path};
  PROMISE(reader.ok());
  std::string payload;
  auto err = read_all_agreeing(reader, list, payload);
  if (list.error)
    PROMISE(same_error(err, list.error));
  else
    PROMISE(quern::is(err, quern::error_code::out_of_range) &&
            quern::message_of(err) == "eof");
  // The error sticks.
  PROMISE(same_error(reader.next(payload), err));

  auto from_file = quern::read_record_file(path);
  PROMISE(from_file.records == list.records);
  PROMISE(from_file.offsets == list.offsets);
  PROMISE(same_error(from_file.error, list.error));

  auto events = quern::read_event_file(path);
  PROMISE(events.path == path);
  PROMISE(events.events.size() == events.offsets.size());
  PROMISE(events.events.size() <= list.records.size());
  for (size_t k = 0; k < events.events.size(); ++k) {
    PROMISE(events.offsets[k] == list.offsets[k]);
    auto ev = quern::decode_event(list.records[k]);
    PROMISE(ev.engaged());
    PROMISE(same_event(*ev, events.events[k]));
  }
  auto n = events.events.size();
  if (n < list.records.size()) {
    PROMISE(!quern::decode_event(list.records[n]));
    PROMISE(quern::is(events.error, quern::error_code::data_loss));
    PROMISE(quern::message_of(events.error) ==
            "cannot parse Event at " + std::to_string(list.offsets[n]));
  } else {
    PROMISE(same_error(events.error, list.error));
  }
}

/// record_reader over a byte_source agrees with read_records on the same bytes.
void check_byte_source(std::string_view buf, const quern::record_list& list) {
  size_t pos = 0;
  quern::record_reader reader{[&](char* dst, size_t n, size_t& got) -> caf::error {
    got = std::min(n, buf.size() - pos);
    std::copy(buf.data() + pos, buf.data() + pos + got, dst);
    pos += got;
    return caf::none;
  }};
  std::string payload;
  auto err = read_all_agreeing(reader, list, payload);
  if (list.error)
    PROMISE(same_error(err, list.error));
  else
    PROMISE(quern::is(err, quern::error_code::out_of_range));
  PROMISE(same_error(reader.next(payload), err));
}

/// Every record of `path` through input's TFRecord source with `options`:
/// the records, and the message of the data_loss error that ended reading
/// ("" at a clean end). Any other exception escapes: a broken promise.
std::pair<std::vector<quern::record>, std::string>
read_source(const std::string& path, const quern::tf_record_options& options) {
  std::vector<quern::record> out;
  try {
    auto source = quern::open_tf_record_source(path, options);
    quern::record r;
    while (source->next(r))
      out.push_back(r);
  } catch (const quern::data_loss_error& e) {
    return {out, e.what()};
  }
  return {out, ""};
}

/// The bytes compressed into a ZLIB file read as read_records reads them;
/// the input as a damaged GZIP or ZLIB file: a clean end or data_loss.
void check_compressed(std::string_view buf, const quern::record_list& list) {
  const auto& path = temp_path();
  std::string z(compressBound(static_cast<uLong>(buf.size())), '\0');
  auto z_size = static_cast<uLongf>(z.size());
  PROMISE(compress2(reinterpret_cast<Bytef*>(z.data()), &z_size,
                    reinterpret_cast<const Bytef*>(buf.data()),
                    static_cast<uLong>(buf.size()), Z_DEFAULT_COMPRESSION) == Z_OK);
  z.resize(z_size);
  write_file(path, z);
  auto [records, error] = read_source(path, quern::tf_record_options{"ZLIB", 7, 5});
  PROMISE(records.size() == list.records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    PROMISE(records[i].value == list.records[i]);
    PROMISE(records[i].key == path + ":" + std::to_string(list.offsets[i]));
  }
  if (list.error)
    PROMISE(error == path + "; " + quern::message_of(list.error) +
                         " (an offset in the decompressed ZLIB data)");
  else
    PROMISE(error.empty());

  write_file(path, buf);
  for (const char* kind : {"GZIP", "ZLIB"}) {
    auto raw = read_source(path, quern::tf_record_options{kind, 64, 64});
    PROMISE(raw.second.empty() || raw.second.rfind(path + "; ", 0) == 0);
  }
}

/// Framed input damaged once: the predicted records and error.
void check_framed(const uint8_t* data, size_t size) {
  if (size < 3)
    return;
  // data[0]: what to do; data[1]: where (a fraction of the stream); then
  // payloads separated by 0xFF bytes.
  auto action = data[0] % 3; // 0 nothing, 1 cut short, 2 change a byte
  auto where = data[1];
  std::vector<std::string> payloads(1);
  for (size_t i = 2; i < size; ++i) {
    if (data[i] == 0xFF)
      payloads.emplace_back();
    else
      payloads.back() += static_cast<char>(data[i]);
  }
  std::string buf;
  std::vector<uint64_t> offsets;
  for (auto& p : payloads) {
    offsets.push_back(buf.size());
    quern::append_record(buf, p);
  }
  size_t damage = buf.size() * where / 256; // < buf.size()
  // The record that holds the damaged byte (or where the cut falls).
  size_t k = 0;
  while (k + 1 < offsets.size() && offsets[k + 1] <= damage)
    ++k;
  auto o = offsets[k];
  std::vector<std::string> expect_records = payloads;
  std::string expect_error;
  if (action == 1) {
    buf.resize(damage);
    expect_records.resize(k);
    if (damage == o)
      expect_error.clear(); // a cut between records is a clean end
    else if (damage - o <= quern::record_header_size)
      expect_error = "truncated record at " + std::to_string(o);
    else
      expect_error =
          "truncated record at " + std::to_string(o + quern::record_header_size);
  } else if (action == 2) {
    buf[damage] = static_cast<char>(buf[damage] ^ (data[1] | 1));
    expect_records.resize(k);
    // CRC-32C catches every change of one byte: in the length or its CRC
    // the header check fails, in the payload or its CRC the payload check.
    auto at = damage - o < quern::record_header_size ? o : o + quern::record_header_size;
    expect_error = "corrupted record at " + std::to_string(at);
  }
  auto list = quern::read_records(buf);
  check_buffer_result(buf, list);
  PROMISE(list.records == expect_records);
  if (expect_error.empty())
    PROMISE(!list.error);
  else
    PROMISE(quern::message_of(list.error) == expect_error);
  check_file_readers(buf, list);
}

void write_seed(const std::string& dir, const std::string& name,
                const std::string& bytes) {
  write_file(dir + "/" + name, bytes);
}

void write_seeds(const std::string& dir) {
  // A small event file as the summary writer writes it.
  std::string file;
  quern::event_encoder encoder;
  encoder.append_event(file, quern::file_version_event(1.5e9));
  encoder.append_scalar(file, 1.5e9 + 1, 1, "loss", 0.25f);
  quern::summary_event ev;
  ev.wall_time = 1.5e9 + 2;
  ev.step = 2;
  quern::summary_value v;
  v.tag = "weights";
  v.value = quern::histogram_data{0, 1, 4, 2, 1.5, {0.5, 1}, {2, 2}};
  ev.what = quern::summary_event::summary{{v}};
  encoder.append_event(file, ev);
  write_seed(dir, "event_file", std::string(1, '\0') + file);
  // The same file cut inside its last record, and with a byte changed.
  write_seed(dir, "event_file_cut",
             std::string(1, '\0') + file.substr(0, file.size() - 5));
  auto bad = file;
  bad[bad.size() / 2] ^= 0x10;
  write_seed(dir, "event_file_bad_crc", std::string(1, '\0') + bad);
  // Not an Event: a framed record of other bytes.
  std::string other;
  quern::append_record(other, "\xff\xff not an event");
  write_seed(dir, "not_an_event", std::string(1, '\0') + file + other);
  // Framed payloads, damaged once: nothing, cut short, a byte changed.
  write_seed(dir, "framed_whole",
             std::string("\x01\x00\x80", 3) + "abc\xff"
                                              "\xff"
                                              "defgh");
  write_seed(dir, "framed_cut",
             std::string("\x01\x01\xa0", 3) + "abc\xff"
                                              "xyz\xff");
  write_seed(dir, "framed_flip",
             std::string("\x01\x02\x30", 3) + "payload\xff"
                                              "more");
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // libprotobuf logs each record it refuses as an Event (invalid UTF-8).
  google::protobuf::SetLogHandler(nullptr);
  if (const char* dir = std::getenv("QUERN_FUZZ_SEEDS_OUT")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  if (data[0] % 2 == 1) {
    check_framed(data + 1, size - 1);
    return 0;
  }
  std::string_view buf{reinterpret_cast<const char*>(data + 1), size - 1};
  auto list = quern::read_records(buf);
  check_buffer_result(buf, list);
  check_file_readers(buf, list);
  check_byte_source(buf, list);
  check_compressed(buf, list);
  return 0;
}
