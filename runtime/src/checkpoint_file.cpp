// Checkpoint files: the format of docs/resume.md (The checkpoint file), written
// whole through write_file_whole, read with every byte checked.

#include "quern/checkpoint_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "quern/error.hpp"
#include "quern/format/crc32c.hpp"
#include "quern/io_error.hpp"
#include "quern/state_bytes.hpp"
#include "quern/whole_file.hpp"

namespace quern {

namespace {

namespace fs = std::filesystem;

constexpr char magic[8] = {'q', 'u', 'e', 'r', 'n', 'c', 'k', 'p'};
constexpr size_t header_size = 28;         // magic, version, step, count, CRC
constexpr size_t section_header_size = 16; // name length, body length, CRC
constexpr size_t max_name = 4096;

uint32_t get_le32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

uint64_t get_le64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

/// The step of a checkpoint file's name, or -1 when it is not one.
int64_t step_of_name(const std::string& name) {
  const std::string prefix = "ckpt-", suffix = ".quern";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  auto digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(),
                                         [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(digits);
}

/// Reads a whole checkpoint file's bytes, checking each against what it
/// must be; every refusal names the file.
class checkpoint_parser {
public:
  checkpoint_parser(std::string path, std::string bytes)
      : path_(std::move(path)), b_(std::move(bytes)) {}

  checkpoint_contents parse() {
    check_magic_and_version();
    need(header_size, "the rest of the header");
    checkpoint_contents c;
    c.step = static_cast<int64_t>(get_le64(b_.data() + 12));
    auto count = get_le32(b_.data() + 20);
    if (crc32c(b_.data(), 24) != get_le32(b_.data() + 24))
      refuse("checksum mismatch of the header (bytes 0..27)");
    pos_ = header_size;
    for (uint32_t i = 0; i < count; ++i)
      read_section(c, i);
    need(pos_ + 4, "the file's checksum");
    if (crc32c(b_.data(), pos_) != get_le32(b_.data() + pos_))
      refuse("checksum mismatch of the whole file (bytes 0.." + std::to_string(pos_ - 1) +
             ")");
    pos_ += 4;
    if (pos_ != b_.size())
      refuse(std::to_string(b_.size() - pos_) + " trailing bytes after the end at byte " +
             std::to_string(pos_));
    if (c.step < 0)
      refuse("negative step " + std::to_string(c.step));
    return c;
  }

  [[noreturn]] void refuse(const std::string& problem) const {
    throw data_loss_error("checkpoint '" + path_ + "': " + problem);
  }

private:
  /// Refuses the file unless it has `end` bytes at least.
  void need(uint64_t end, const std::string& what) const {
    if (b_.size() < end)
      truncated(what);
  }

  [[noreturn]] void truncated(const std::string& what) const {
    refuse("truncated at byte " + std::to_string(b_.size()) + " (expected " + what +
           " at byte " + std::to_string(pos_) + ")");
  }

  void check_magic_and_version() {
    if (b_.empty())
      refuse("not a quern checkpoint: the file is empty");
    auto n = std::min(b_.size(), sizeof magic);
    if (std::memcmp(b_.data(), magic, n) != 0)
      refuse("not a quern checkpoint: it does not start with quern's magic \"quernckp\"");
    need(sizeof magic, "the magic");
    pos_ = sizeof magic;
    need(12, "the format version");
    auto version = get_le32(b_.data() + 8);
    if (version > checkpoint_format_version)
      refuse("written by a newer quern (format version " + std::to_string(version) +
             ", this one reads up to " + std::to_string(checkpoint_format_version) + ")");
    if (version == 0)
      refuse("unknown format version 0");
    pos_ = 12;
  }

  void read_section(checkpoint_contents& c, uint32_t index) {
    auto at = pos_;
    auto label = "section " + std::to_string(index);
    need(pos_ + section_header_size, "the header of " + label);
    const char* h = b_.data() + pos_;
    auto name_size = get_le32(h);
    auto body_size = get_le64(h + 4);
    if (crc32c(h, 12) != get_le32(h + 12))
      refuse("checksum mismatch of the header of " + label + " at byte " +
             std::to_string(at));
    if (name_size == 0 || name_size > max_name)
      refuse("bad name length " + std::to_string(name_size) + " of " + label +
             " at byte " + std::to_string(at));
    pos_ += section_header_size;
    auto left = b_.size() - pos_;
    if (name_size > left || body_size > left - name_size ||
        left - name_size - body_size < 4)
      truncated("the " + std::to_string(name_size) + "-byte name, " +
                std::to_string(body_size) + "-byte body and checksum of " + label);
    std::string name(b_.data() + pos_, name_size);
    auto body_at = pos_ + name_size;
    auto crc_at = body_at + body_size;
    if (crc32c(b_.data() + pos_, name_size + body_size) != get_le32(b_.data() + crc_at))
      refuse("checksum mismatch of section \"" + name + "\" at byte " +
             std::to_string(at));
    auto [it, fresh] =
        c.sections.emplace(std::move(name), std::string(b_.data() + body_at,
                                                        static_cast<size_t>(body_size)));
    if (!fresh)
      refuse("duplicate section \"" + it->first + "\" at byte " + std::to_string(at));
    pos_ = static_cast<size_t>(crc_at) + 4;
  }

  std::string path_;
  std::string b_;
  size_t pos_ = 0;
};

[[noreturn]] void throw_io(int err, const std::string& what) {
  throw_error(io_error(err, what));
}

std::string read_file_bytes(const std::string& path) {
  int fd;
  // O_NONBLOCK: a FIFO planted under a checkpoint's name must not block the
  // open until someone writes to it (it is refused below).
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0)
    throw_io(errno, "cannot read checkpoint '" + path + "'");
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    auto err = errno;
    ::close(fd);
    throw_io(err, "cannot read checkpoint '" + path + "'");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw data_loss_error("checkpoint '" + path + "': not a quern checkpoint: it is " +
                          (S_ISDIR(st.st_mode) ? "a directory" : "not a regular file"));
  }
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    auto n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      bytes.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0)
      break;
    if (errno == EINTR)
      continue;
    auto err = errno;
    ::close(fd);
    throw_io(err, "cannot read checkpoint '" + path + "'");
  }
  ::close(fd);
  return bytes;
}

void check_contents(const checkpoint_contents& c, int keep_last) {
  if (keep_last < 1)
    throw invalid_argument_error("keep_last must be >= 1 not " +
                                 std::to_string(keep_last));
  if (c.step < 0)
    throw invalid_argument_error("a checkpoint's step must be >= 0 not " +
                                 std::to_string(c.step));
  for (const auto& [name, body] : c.sections)
    if (name.empty() || name.size() > max_name)
      throw invalid_argument_error("a checkpoint section's name must be 1.." +
                                   std::to_string(max_name) + " bytes, not " +
                                   std::to_string(name.size()));
}

} // namespace

std::string checkpoint_path(const std::string& dir, int64_t step) {
  return (fs::path(dir) / ("ckpt-" + std::to_string(step) + ".quern")).string();
}

std::string encode_checkpoint(const checkpoint_contents& c) {
  state_writer header;
  for (char m : magic)
    header.write_u8(static_cast<uint8_t>(m));
  header.write_u32(checkpoint_format_version);
  header.write_i64(c.step);
  header.write_u32(static_cast<uint32_t>(c.sections.size()));
  header.write_u32(crc32c(header.bytes()));
  auto out = header.take();
  for (const auto& [name, body] : c.sections) {
    state_writer h;
    h.write_u32(static_cast<uint32_t>(name.size())).write_u64(body.size());
    h.write_u32(crc32c(h.bytes()));
    out += h.bytes();
    out += name;
    out += body;
    // The section's checksum covers its name and body, one after the other.
    state_writer crc;
    crc.write_u32(crc32c_extend(crc32c(name), body.data(), body.size()));
    out += crc.bytes();
  }
  state_writer trailer;
  trailer.write_u32(crc32c(out));
  out += trailer.bytes();
  return out;
}

std::string write_checkpoint(const std::string& dir, const checkpoint_contents& c,
                             int keep_last) {
  checkpoint_write_options opts;
  opts.keep_last = keep_last;
  return write_checkpoint(dir, c, opts);
}

std::string write_checkpoint(const std::string& dir, const checkpoint_contents& c,
                             const checkpoint_write_options& opts) {
  auto keep_last = opts.keep_last;
  check_contents(c, keep_last);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw_io(ec.value(), "cannot create checkpoint directory '" + dir + "'");
  auto path = checkpoint_path(dir, c.step);
  auto bytes = encode_checkpoint(c);
  auto outcome = write_file_whole(
      path,
      [&](std::FILE* f) {
        return std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
      },
      opts.sync);
  if (!outcome.ok()) {
    if (outcome.err != 0)
      throw_io(outcome.err, "cannot write checkpoint '" + path + "'");
    throw unknown_error(outcome.why);
  }
  // keep_also stays beside the keep_last others.
  std::vector<std::string> all;
  for (auto& file : list_checkpoints(dir)) {
    std::error_code same_ec;
    if (opts.keep_also.empty() || !fs::equivalent(file, opts.keep_also, same_ec))
      all.push_back(file);
  }
  auto excess = all.size() > static_cast<size_t>(keep_last)
                    ? all.size() - static_cast<size_t>(keep_last)
                    : size_t{0};
  for (size_t i = 0; i < all.size() && excess > 0; ++i) {
    if (all[i] == path)
      continue;
    fs::remove(all[i], ec); // one that stays is removed by a later write
    --excess;
  }
  return path;
}

checkpoint_contents read_checkpoint(const std::string& path) {
  return checkpoint_parser{path, read_file_bytes(path)}.parse();
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  fs::directory_iterator it{dir, ec};
  if (ec == std::errc::no_such_file_or_directory)
    return {};
  if (ec)
    throw_io(ec.value(), "cannot list checkpoint directory '" + dir + "'");
  for (; it != fs::directory_iterator{}; it.increment(ec)) {
    auto step = step_of_name(it->path().filename().string());
    if (step >= 0)
      found.emplace_back(step, it->path().string());
  }
  if (ec)
    throw_io(ec.value(), "cannot list checkpoint directory '" + dir + "'");
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& f : found)
    paths.push_back(std::move(f.second));
  return paths;
}

std::optional<checkpoint_contents>
read_latest_checkpoint(const std::string& dir, std::vector<std::string>* refused,
                       std::string* path) {
  auto all = list_checkpoints(dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      auto c = read_checkpoint(*it);
      if (path != nullptr)
        *path = *it;
      return c;
    } catch (const op_error& e) {
      if (refused != nullptr)
        refused->push_back(e.what());
    }
  }
  return std::nullopt;
}

} // namespace quern
