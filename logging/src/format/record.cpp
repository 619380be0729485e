#include "quern/format/record.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include <sys/stat.h>

#include "quern/error.hpp"
#include "quern/io_error.hpp"

namespace quern {

namespace {

void put_le32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

void put_le64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

uint32_t get_le32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

uint64_t get_le64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

caf::error truncated_at(uint64_t offset) {
  return make_error(error_code::data_loss,
                    "truncated record at " + std::to_string(offset));
}

caf::error corrupted_at(uint64_t offset) {
  return make_error(error_code::data_loss,
                    "corrupted record at " + std::to_string(offset));
}

caf::error eof() {
  return make_error(error_code::out_of_range, "eof");
}

// Checks the header at `hdr` (12 bytes) of the record at `offset`; on
// success stores the payload length.
caf::error check_header(const char* hdr, uint64_t offset, uint64_t& length) {
  if (mask_crc(crc32c(hdr, 8)) != get_le32(hdr + 8))
    return corrupted_at(offset);
  length = get_le64(hdr);
  return caf::none;
}

} // namespace

char* begin_record(std::string& out, size_t size) {
  auto start = out.size();
  out.resize(start + record_header_size + size + record_footer_size);
  auto* hdr = out.data() + start;
  put_le64(hdr, size);
  put_le32(hdr + 8, mask_crc(crc32c(hdr, 8)));
  return hdr + record_header_size;
}

void end_record(char* payload, size_t size) {
  put_le32(payload + size, mask_crc(crc32c(payload, size)));
}

void append_record(std::string& out, std::string_view payload) {
  auto* p = begin_record(out, payload.size());
  std::copy(payload.begin(), payload.end(), p);
  end_record(p, payload.size());
}

record_list read_records(std::string_view buf) {
  record_list result;
  uint64_t offset = 0;
  for (;;) {
    auto avail = buf.size() - offset;
    if (avail == 0)
      return result;
    if (avail < record_header_size) {
      result.error = truncated_at(offset);
      return result;
    }
    uint64_t length = 0;
    if (auto err = check_header(buf.data() + offset, offset, length)) {
      result.error = std::move(err);
      return result;
    }
    auto body = avail - record_header_size;
    if (body == 0) {
      result.error = truncated_at(offset);
      return result;
    }
    if (body < record_footer_size || body - record_footer_size < length) {
      result.error = truncated_at(offset + record_header_size);
      return result;
    }
    auto payload = buf.substr(offset + record_header_size, length);
    if (mask_crc(crc32c(payload)) !=
        get_le32(buf.data() + offset + record_header_size + length)) {
      result.error = corrupted_at(offset + record_header_size);
      return result;
    }
    result.records.emplace_back(payload);
    result.offsets.push_back(offset);
    offset += record_header_size + length + record_footer_size;
  }
}

record_reader::record_reader(const std::string& path, uint64_t start) : offset_(start) {
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    open_error_ = io_error(errno, "cannot open '" + path + "'");
    return;
  }
  // fopen takes a directory; its first read fails, which looked like an
  // empty file: say what it is instead.
  struct stat st;
  if (::fstat(::fileno(file_), &st) == 0 && S_ISDIR(st.st_mode)) {
    open_error_ = io_error(EISDIR, "cannot open '" + path + "'");
    return;
  }
  if (start == 0)
    return;
  int err = 0;
  if (start > static_cast<uint64_t>(std::numeric_limits<off_t>::max()))
    err = EINVAL;
  else if (::fseeko(file_, static_cast<off_t>(start), SEEK_SET) != 0)
    err = errno;
  if (err != 0)
    open_error_ = io_error(err, "cannot seek to offset " + std::to_string(start) +
                                    " of '" + path + "'");
}

record_reader::record_reader(byte_source bytes, uint64_t start)
    : bytes_(std::move(bytes)), offset_(start) {}

record_reader::~record_reader() {
  if (file_ != nullptr)
    std::fclose(file_);
}

caf::error record_reader::next(std::string& payload) {
  if (open_error_)
    return open_error_;
  if (sticky_)
    return sticky_;
  auto err = bytes_ ? next_from_bytes(payload) : next_from_file(payload);
  if (err) {
    sticky_ = err;
    return err;
  }
  offset_ += record_header_size + payload.size() + record_footer_size;
  return caf::none;
}

caf::error record_reader::next_from_file(std::string& payload) {
  char hdr[record_header_size];
  auto n = std::fread(hdr, 1, sizeof(hdr), file_);
  if (n == 0 && std::ferror(file_))
    return io_error(errno, "cannot read at offset " + std::to_string(offset_));
  if (n == 0)
    return eof();
  if (n < sizeof(hdr))
    return truncated_at(offset_);
  uint64_t length = 0;
  if (auto err = check_header(hdr, offset_, length))
    return err;
  // Never trust the length with an allocation larger than the file. The
  // size is looked up again only when the record seems to pass the end
  // known so far (the file may be growing while it is read).
  auto end = offset_ + record_header_size + length + record_footer_size;
  if (end > known_size_ || end < offset_) {
    struct stat st;
    if (fstat(fileno(file_), &st) == 0)
      known_size_ = static_cast<uint64_t>(st.st_size);
  }
  uint64_t body = 0;
  if (known_size_ > offset_ + record_header_size)
    body = known_size_ - offset_ - record_header_size;
  if (body == 0)
    return truncated_at(offset_);
  if (body < record_footer_size || body - record_footer_size < length)
    return truncated_at(offset_ + record_header_size);
  payload.resize(length);
  char ftr[record_footer_size];
  if (std::fread(payload.data(), 1, length, file_) != length ||
      std::fread(ftr, 1, sizeof(ftr), file_) != sizeof(ftr))
    return truncated_at(offset_ + record_header_size);
  if (mask_crc(crc32c(payload)) != get_le32(ftr))
    return corrupted_at(offset_ + record_header_size);
  return caf::none;
}

caf::error record_reader::next_from_bytes(std::string& payload) {
  char hdr[record_header_size];
  size_t n = 0;
  if (auto err = bytes_(hdr, sizeof(hdr), n))
    return err;
  if (n == 0)
    return eof();
  if (n < sizeof(hdr))
    return truncated_at(offset_);
  uint64_t length = 0;
  if (auto err = check_header(hdr, offset_, length))
    return err;
  // The payload grows a chunk at a time, as far as bytes arrive: a length
  // is never trusted with an allocation before its bytes are there.
  constexpr uint64_t chunk = 1 << 20;
  payload.clear();
  while (payload.size() < length) {
    auto before = payload.size();
    auto want = static_cast<size_t>(std::min<uint64_t>(chunk, length - before));
    payload.resize(before + want);
    size_t got = 0;
    auto err = bytes_(payload.data() + before, want, got);
    payload.resize(before + got);
    if (err)
      return err;
    if (got < want) // SW-22: no byte after the header is a truncation at X
      return truncated_at(payload.empty() ? offset_ : offset_ + record_header_size);
  }
  char ftr[record_footer_size];
  size_t got = 0;
  if (auto err = bytes_(ftr, sizeof(ftr), got))
    return err;
  if (got < sizeof(ftr))
    return truncated_at(length == 0 && got == 0 ? offset_ : offset_ + record_header_size);
  if (mask_crc(crc32c(payload)) != get_le32(ftr))
    return corrupted_at(offset_ + record_header_size);
  return caf::none;
}

record_list read_record_file(const std::string& path) {
  record_list result;
  record_reader reader{path};
  std::string payload;
  for (;;) {
    auto offset = reader.offset();
    auto err = reader.next(payload);
    if (err) {
      if (!is(err, error_code::out_of_range))
        result.error = std::move(err);
      return result;
    }
    result.records.push_back(std::move(payload));
    result.offsets.push_back(offset);
  }
}

} // namespace quern
